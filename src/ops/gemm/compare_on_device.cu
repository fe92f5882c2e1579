// compare_gemm_on_device (reference.hpp): compare_gemm's element rule, reduced on the device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cub/block/block_reduce.cuh>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "ops/gemm/reference.hpp"

namespace cudalab::harness {
namespace {

constexpr int kBlock = 256;

// One block's share of the comparison; first_mismatch is the lowest index that failed.
struct Partial {
  long long count, mismatches, non_finite, first_mismatch;
  double max_abs_error, error_squares, reference_squares;
};

struct Combine {
  __device__ Partial operator()(const Partial& a, const Partial& b) const {
    return {a.count + b.count,
            a.mismatches + b.mismatches,
            a.non_finite + b.non_finite,
            a.first_mismatch < b.first_mismatch ? a.first_mismatch : b.first_mismatch,
            fmax(a.max_abs_error, b.max_abs_error),
            a.error_squares + b.error_squares,
            a.reference_squares + b.reference_squares};
  }
};

template <typename T>
__global__ void __launch_bounds__(kBlock)
    compare_kernel(const T* out, std::int64_t count, const double* value, const double* bound, std::int64_t k,
                   GemmTolerance tolerance, Partial* partials) {
  Partial p{0, 0, 0, std::numeric_limits<long long>::max(), 0.0, 0.0, 0.0};
  for (std::int64_t i = global_thread_index(); i < count; i += global_thread_count()) {
    const double got = to_float(out[i]), want = value[i];
    const double error = fabs(got - want);
    ++p.count;
    p.reference_squares += want * want;
    const bool finite = isfinite(got);
    if (!finite) {
      ++p.non_finite;
    } else {
      p.error_squares += error * error;
      p.max_abs_error = fmax(p.max_abs_error, error);
    }
    if ((!finite || !(error <= gemm_error_bound(k, bound[i], tolerance, want))) && p.mismatches++ == 0)
      p.first_mismatch = i;
  }
  using Reduce = cub::BlockReduce<Partial, kBlock>;
  __shared__ typename Reduce::TempStorage scratch;
  const Partial total = Reduce(scratch).Reduce(p, Combine{});
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <typename T>
int launch(const void* out, std::int64_t count, const double* value, const double* bound, std::int64_t k,
           const GemmTolerance& tolerance, Partial* partials, int max_blocks, cudaStream_t stream) {
  const int blocks = std::min(max_blocks, resident_grid_size(compare_kernel<T>, kBlock, count));
  compare_kernel<T>
      <<<blocks, kBlock, 0, stream>>>(static_cast<const T*>(out), count, value, bound, k, tolerance, partials);
  CUDALAB_CHECK_LAUNCH();
  return blocks;
}

}  // namespace

Comparison compare_gemm_on_device(DType out_dtype, const void* out, std::int64_t count, const double* value,
                                  const double* bound, std::int64_t k, const GemmTolerance& tolerance,
                                  cudaStream_t stream) {
  Comparison total;
  total.tolerance = reported_tolerance(k, tolerance);
  if (count == 0) return total;
  constexpr int kMaxBlocks = 4096;
  DeviceBuffer<Partial> partials(kMaxBlocks);
  int blocks = 0;
  switch (out_dtype) {
    case DType::f32:
      blocks = launch<float>(out, count, value, bound, k, tolerance, partials.data(), kMaxBlocks, stream);
      break;
    case DType::f16:
      blocks = launch<__half>(out, count, value, bound, k, tolerance, partials.data(), kMaxBlocks, stream);
      break;
    case DType::bf16:
      blocks = launch<__nv_bfloat16>(out, count, value, bound, k, tolerance, partials.data(), kMaxBlocks, stream);
      break;
    default:
      throw Error(ErrorKind::invalid_argument, "compare_gemm_on_device: f32, f16 or bf16 outputs only", __FILE__,
                  __LINE__);
  }
  std::vector<Partial> host(static_cast<std::size_t>(blocks));
  CUDALAB_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), partials.data(), host.size() * sizeof(Partial), cudaMemcpyDeviceToHost, stream));
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  ComparisonBuilder builder(total.tolerance);
  for (const Partial& p : host) {  // in block order: the same sums for the same grid
    Comparison part;
    part.count = p.count, part.mismatches = p.mismatches, part.non_finite = p.non_finite;
    part.first_mismatch = p.mismatches > 0 ? p.first_mismatch : -1;
    part.max_abs_error = p.max_abs_error;
    builder.merge(part, p.error_squares, p.reference_squares);
  }
  total = builder.finish();
  if (total.mismatches > 0) {  // the first mismatch's values, read back alone
    const std::size_t element = size_of(out_dtype);
    unsigned char got[sizeof(double)] = {};
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(got, static_cast<const unsigned char*>(out) + total.first_mismatch * element,
                                       element, cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(&total.first_mismatch_ref, value + total.first_mismatch, sizeof(double),
                                       cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    total.first_mismatch_out = element_to_double(out_dtype, got, 0);
  }
  return total;
}

}  // namespace cudalab::harness
