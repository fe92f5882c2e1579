#include "cudalab/reduce.hpp"

#include <type_traits>

#include "cudalab/error.hpp"
#include "ops/reduce/variants.hpp"

namespace cudalab {
namespace {

// Chosen by measurement on the H100 (docs/reduce.md): int32 takes `shuffle_atomic`, the fastest
// verified variant (level with CUB; integer atomics add in any order to the same bits). fp32
// takes `single_pass`, within 1% of it and deterministic, where float atomics are not.
// fp32 summed in double takes `single_pass_f64`, deterministic like the fp32 choice.
template <typename T, typename Out>
void reduce_sum_impl(const T* in, std::int64_t n, Out* out, cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, "reduce_sum: n must be >= 0, got " + std::to_string(n));
  CUDALAB_REQUIRE(out != nullptr, "reduce_sum: out must be a device pointer, got null");
  CUDALAB_REQUIRE(n == 0 || in != nullptr, "reduce_sum: in must be a device pointer, got null");
  constexpr bool kDoubleSum = !std::is_same_v<T, Out>;
  const std::size_t bytes =
      kDoubleSum ? reduce_variants::workspace_bytes_f64(n) : reduce_variants::workspace_bytes<T>(n);
  void* workspace = nullptr;
  CUDALAB_CUDA_CHECK(cudaMallocAsync(&workspace, bytes, stream));
  // Released on the stream even when a launch below throws.
  struct Release {
    void* pointer;
    cudaStream_t stream;
    ~Release() { cudaFreeAsync(pointer, stream); }
  } release{workspace, stream};
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(workspace, 0, sizeof(unsigned), stream));  // the ticket counter
  if constexpr (kDoubleSum) {
    reduce_variants::single_pass_f64(in, n, out, workspace, stream);
  } else if constexpr (std::is_floating_point_v<T>) {
    reduce_variants::single_pass(in, n, out, workspace, stream);
  } else {
    reduce_variants::shuffle_atomic(in, n, out, workspace, stream);
  }
}

}  // namespace

void reduce_sum(const float* in, std::int64_t n, float* out, cudaStream_t stream) {
  reduce_sum_impl(in, n, out, stream);
}

void reduce_sum(const std::int32_t* in, std::int64_t n, std::int32_t* out, cudaStream_t stream) {
  reduce_sum_impl(in, n, out, stream);
}

void reduce_sum(const float* in, std::int64_t n, double* out, cudaStream_t stream) {
  reduce_sum_impl(in, n, out, stream);
}

}  // namespace cudalab
