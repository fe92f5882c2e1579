#include <string>

#include <cub/device/device_reduce.cuh>

#include "ops/reduce/multi_pass.cuh"

namespace cudalab::reduce_variants {
namespace {

template <typename T>
std::size_t cub_temp_bytes(std::int64_t n) {
  std::size_t bytes = 0;
  CUDALAB_CUDA_CHECK(
      cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const T*>(nullptr), static_cast<T*>(nullptr), n));
  return bytes;
}

// CUB's temporary storage in `args`' workspace, past the ticket counters; throws when the
// workspace is too small for `bytes` of it.
template <typename Args>
void* cub_storage(const Args& args, std::size_t bytes) {
  const std::size_t needed = counter_bytes(args.n) + bytes;
  CUDALAB_REQUIRE(args.workspace != nullptr && args.workspace_bytes >= needed,
                  "reduce cub: the workspace holds " + std::to_string(args.workspace_bytes) +
                      " bytes, the launch needs " + std::to_string(needed) + " (see reduce_variants::workspace_bytes)");
  return static_cast<unsigned char*>(args.workspace) + counter_bytes(args.n);
}

}  // namespace

// CUB's temporary storage starts past the ticket counters, which must stay zero.
template <typename T>
std::size_t workspace_bytes(std::int64_t n) {
  const std::size_t own = own_workspace_bytes<T>(n);
  const std::size_t cub = counter_bytes(n) + cub_temp_bytes<T>(n);
  return own > cub ? own : cub;
}

template <typename T>
void cub_sum(const ReduceArgs<T>& args, cudaStream_t stream) {
  std::size_t bytes = cub_temp_bytes<T>(args.n);
  CUDALAB_CUDA_CHECK(cub::DeviceReduce::Sum(cub_storage(args, bytes), bytes, args.in, args.out, args.n, stream));
}

namespace {
// cub::DeviceReduce::TransformReduce with a float-to-double conversion: CUB's way to sum floats
// in double without a converted copy of the input.
struct ToDouble {
  __host__ __device__ double operator()(float x) const { return static_cast<double>(x); }
};

cudaError_t cub_sum_f64_call(void* temp, std::size_t& bytes, const float* in, std::int64_t n, double* out,
                             cudaStream_t stream) {
  return cub::DeviceReduce::TransformReduce(temp, bytes, in, out, n, cuda::std::plus<double>{}, ToDouble{}, 0.0,
                                            stream);
}
}  // namespace

std::size_t workspace_bytes_f64(std::int64_t n) {
  std::size_t cub = 0;
  CUDALAB_CUDA_CHECK(cub_sum_f64_call(nullptr, cub, nullptr, n, nullptr, nullptr));
  const std::size_t own = own_workspace_bytes<double>(n);
  return own > counter_bytes(n) + cub ? own : counter_bytes(n) + cub;
}

void cub_sum_f64(const ReduceArgs<float, double>& args, cudaStream_t stream) {
  std::size_t bytes = 0;
  CUDALAB_CUDA_CHECK(cub_sum_f64_call(nullptr, bytes, args.in, args.n, args.out, stream));
  CUDALAB_CUDA_CHECK(cub_sum_f64_call(cub_storage(args, bytes), bytes, args.in, args.n, args.out, stream));
}

template std::size_t workspace_bytes<float>(std::int64_t);
template std::size_t workspace_bytes<std::int32_t>(std::int64_t);
template void cub_sum<float>(const ReduceArgs<float>&, cudaStream_t);
template void cub_sum<std::int32_t>(const ReduceArgs<std::int32_t>&, cudaStream_t);

}  // namespace cudalab::reduce_variants
