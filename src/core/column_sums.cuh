// Deterministic column sums over the rows of a matrix, the scheme every backward that sums down
// columns uses (norms' dgamma and dbeta, bias_act's dbias): each CTA of the op's own kernel
// writes one fp32 partial per column into a [parts][features] array (a CTA's rows summed in an
// order the kernel fixes), and launch_column_partials_sum adds each column's partials in a fixed order
// and rounds once to the output type. No float atomics: equal inputs give equal bits on every run.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "cudalab/error.hpp"

namespace cudalab {

inline constexpr int kColumnSumMaxLanes = 32;

// out[j] = the sum of partials[p * features + j] over p < parts. Blocks of 32 columns (a warp reads
// 128 contiguous bytes of a partial row) x `lanes` (blockDim.y, a power of two): lane l adds
// partials l, l + lanes, ... in order, then a pairwise tree over the lanes in shared memory. A
// resident grid strides over the column groups.
template <typename T>
__global__ void __launch_bounds__(kWarpSize* kColumnSumMaxLanes)
    column_partials_sum_kernel(const float* __restrict__ partials, std::int64_t parts, std::int64_t features,
                               T* __restrict__ out) {
  __shared__ float lane_sums[kColumnSumMaxLanes][kWarpSize];
  const int lanes = static_cast<int>(blockDim.y);
  for (std::int64_t group = blockIdx.x; group * kWarpSize < features; group += gridDim.x) {
    const std::int64_t j = group * kWarpSize + threadIdx.x;
    float sum = 0.0f;
    if (j < features) {
#pragma unroll 4
      for (std::int64_t p = threadIdx.y; p < parts; p += lanes) sum += partials[p * features + j];
    }
    lane_sums[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    for (int half = lanes / 2; half > 0; half /= 2) {
      if (static_cast<int>(threadIdx.y) < half)
        lane_sums[threadIdx.y][threadIdx.x] += lane_sums[threadIdx.y + half][threadIdx.x];
      __syncthreads();
    }
    if (threadIdx.y == 0 && j < features) out[j] = from_float<T>(lane_sums[0][threadIdx.x]);
    __syncthreads();  // the next group reuses lane_sums
  }
}

// out = the column sums of `parts` rows of partials (parts == 0: zeros, the empty sum). As many
// lanes as partials, up to 32: fewer partials leave no lane idle.
template <typename T>
void launch_column_partials_sum(const float* partials, std::int64_t parts, std::int64_t features, T* out,
                                cudaStream_t stream) {
  if (features == 0) return;
  int lanes = 1;  // the smallest power of two >= parts, at most kColumnSumMaxLanes
  while (lanes < kColumnSumMaxLanes && lanes < parts) lanes *= 2;
  const std::int64_t groups = ceil_div<std::int64_t>(features, kWarpSize);
  const int blocks = resident_grid_size(column_partials_sum_kernel<T>, kWarpSize * lanes, groups * kWarpSize * lanes);
  column_partials_sum_kernel<T><<<blocks, dim3(kWarpSize, lanes), 0, stream>>>(partials, parts, features, out);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab
