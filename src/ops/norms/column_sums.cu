// The second, small kernel of both backward rungs: dgamma and dbeta from the per-chunk column
// partials the first kernel left in the workspace. A 32 x 32 block takes 32 columns; its 32 rows
// of threads sum every 32nd partial of their column (a warp reads 128 contiguous bytes per
// partial), then the first row adds the 32 slices in order. The order of every addition is fixed
// by the partial count, so the result is the same bits on every run.
#include <algorithm>
#include <cstdint>

#include "core/launch.cuh"
#include "core/warp.cuh"
#include "cudalab/error.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

template <typename T>
__global__ void __launch_bounds__(kWarpSize* kWarpSize)
    norm_sum_column_partials_kernel(const float* partials, std::int64_t count, std::int64_t features, T* out) {
  __shared__ float slices[kWarpSize][kWarpSize + 1];
  const std::int64_t column = static_cast<std::int64_t>(blockIdx.x) * kWarpSize + threadIdx.x;
  float sum = 0.0f;
  if (column < features) {
#pragma unroll 4
    for (std::int64_t p = threadIdx.y; p < count; p += kWarpSize) sum += partials[p * features + column];
  }
  slices[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && column < features) {
    float total = 0.0f;
#pragma unroll
    for (int s = 0; s < kWarpSize; ++s) total += slices[s][threadIdx.x];
    out[column] = from_float<T>(total);
  }
}

}  // namespace

template <typename T>
void sum_column_partials(const float* partials, std::int64_t count, std::int64_t features, T* out,
                         cudaStream_t stream) {
  if (features == 0) return;
  const std::int64_t blocks = ceil_div<std::int64_t>(features, kWarpSize);
  norm_sum_column_partials_kernel<T>
      <<<static_cast<int>(blocks), dim3(kWarpSize, kWarpSize), 0, stream>>>(partials, count, features, out);
  CUDALAB_CHECK_LAUNCH();
}

template void sum_column_partials<float>(const float*, std::int64_t, std::int64_t, float*, cudaStream_t);
template void sum_column_partials<__half>(const float*, std::int64_t, std::int64_t, __half*, cudaStream_t);
template void sum_column_partials<__nv_bfloat16>(const float*, std::int64_t, std::int64_t, __nv_bfloat16*,
                                                 cudaStream_t);

}  // namespace cudalab::norms_variants
