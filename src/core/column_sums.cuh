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
#include "cudalab/error.hpp"

namespace cudalab {

inline constexpr int kColumnSumColumns = 8;    // a block's columns: 32 bytes of a partial row, one sector
inline constexpr int kColumnSumMaxLanes = 64;  // its partial-row lanes
inline constexpr int kColumnSumMaxOutputs = 2;

// Up to two column sums at once (a LayerNorm's dgamma and dbeta): output o's partials at
// partials[o], each `parts` rows of `features` floats, its sums to out[o].
template <typename T>
struct ColumnSums {
  const float* partials[kColumnSumMaxOutputs] = {};
  T* out[kColumnSumMaxOutputs] = {};
  int outputs = 1;
};

// out[j] = the sum of partials[p * features + j] over p < parts, for each output. Blocks of 8
// columns (a warp reads four partial rows' 32-byte sectors) x `lanes` (blockDim.y, a power of two):
// lane l adds partials l, l + lanes, ... in order (unrolled by 8), then a pairwise tree over
// the lanes in shared memory. Narrow blocks with many lanes keep every SM busy and each thread's
// chain of loads short where features are few (1024: 128 blocks an output, where 32-column blocks
// gave 32). A resident grid strides over (output, column group).
template <typename T>
__global__ void __launch_bounds__(kColumnSumColumns* kColumnSumMaxLanes)
    column_partials_sum_kernel(ColumnSums<T> sums, std::int64_t parts, std::int64_t features) {
  __shared__ float lane_sums[kColumnSumMaxLanes][kColumnSumColumns];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");  // the kernel before, which wrote the partials, is done
#endif
  const int lanes = static_cast<int>(blockDim.y);
  const std::int64_t groups = ceil_div<std::int64_t>(features, kColumnSumColumns);
  for (std::int64_t item = blockIdx.x; item < groups * sums.outputs; item += gridDim.x) {
    const int o = static_cast<int>(item / groups);
    const std::int64_t j = (item - o * groups) * kColumnSumColumns + threadIdx.x;
    // Selects, not an indexed read: a run-time index into the parameter struct would copy it to
    // local memory and turn the loads generic.
    const float* __restrict__ partials = o == 0 ? sums.partials[0] : sums.partials[1];
    T* __restrict__ out = o == 0 ? sums.out[0] : sums.out[1];
    float sum = 0.0f;
    if (j < features) {
#pragma unroll 8
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
    __syncthreads();  // the next item reuses lane_sums
  }
}

// Each output's column sums of `parts` rows of partials (parts == 0: zeros, the empty sum), in one
// launch. As many lanes as partials, up to 64: fewer partials leave no lane idle.
template <typename T>
void launch_column_partials_sum(const ColumnSums<T>& sums, std::int64_t parts, std::int64_t features,
                                cudaStream_t stream) {
  if (features == 0 || sums.outputs == 0) return;
  CUDALAB_REQUIRE(sums.outputs <= kColumnSumMaxOutputs, "column sums: at most two outputs a launch");
  int lanes = 1;  // the smallest power of two >= parts, at most kColumnSumMaxLanes
  while (lanes < kColumnSumMaxLanes && lanes < parts) lanes *= 2;
  const std::int64_t items = ceil_div<std::int64_t>(features, kColumnSumColumns) * sums.outputs;
  const int threads = kColumnSumColumns * lanes;
  const int blocks = resident_grid_size(column_partials_sum_kernel<T>, threads, items * threads);
  // On Hopper a programmatic dependent launch: this grid is launched while the kernel before it
  // finishes and waits for it inside (griddepcontrol.wait), so its launch latency is hidden.
  cudaLaunchAttribute dependent[1] = {};
  dependent[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(kColumnSumColumns, static_cast<unsigned>(lanes));
  config.stream = stream;
  config.attrs = dependent;
  config.numAttrs = current_gpu().compute_capability >= 90 ? 1 : 0;
  CUDALAB_CUDA_CHECK(cudaLaunchKernelEx(&config, column_partials_sum_kernel<T>, sums, parts, features));
}

// One output's column sums.
template <typename T>
void launch_column_partials_sum(const float* partials, std::int64_t parts, std::int64_t features, T* out,
                                cudaStream_t stream) {
  ColumnSums<T> sums;
  sums.partials[0] = partials;
  sums.out[0] = out;
  launch_column_partials_sum(sums, parts, features, stream);
}

}  // namespace cudalab
