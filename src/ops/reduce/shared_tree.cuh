// The classic shared-memory steps 1-6 (and the tutorial's racy filter-free loop, broken on purpose):
// each block loads its elements into a shared tile and reduces the tile as a tree; passes repeat
// on the block sums. The steps differ only in how the tree is walked, so one kernel template
// holds them all, selected by Step. Included by v2_shared_tree.cu (the ladder) and by
// v2_shared_tree_device_debug.cu, which builds the racy step with -G to test the tutorial's
// "right by luck with -G" (claim C17); each file gets its own copy (anonymous namespace).
#pragma once

#include "core/row_reduce.cuh"
#include "ops/reduce/multi_pass.cuh"

namespace cudalab::reduce_variants {
namespace {

enum class Step {
  no_filter,              // broken: every thread adds its neighbour, reads race with writes
  interleaved_divergent,  // 1
  interleaved_strided,    // 2
  sequential,             // 3
  first_add_on_load,      // 4
  unrolled_last_warp,     // 5
  complete_unroll,        // 6
};

constexpr bool loads_two(Step step) {
  return step == Step::first_add_on_load || step == Step::unrolled_last_warp || step == Step::complete_unroll;
}

template <typename T, Step S>
__global__ void __launch_bounds__(kBlockSize) reduce_shared_tree_kernel(const T* in, std::int64_t n, T* partials) {
  using Acc = accumulator_t<T>;
  __shared__ Acc tile[kBlockSize];
  const unsigned tid = threadIdx.x;
  constexpr int kPerBlock = loads_two(S) ? 2 * kBlockSize : kBlockSize;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kPerBlock + tid;
  Acc value = i < n ? static_cast<Acc>(in[i]) : Acc{};
  if constexpr (loads_two(S)) {
    if (i + kBlockSize < n) value += static_cast<Acc>(in[i + kBlockSize]);
  }
  tile[tid] = value;
  __syncthreads();

  if constexpr (S == Step::no_filter) {
    for (unsigned s = 1; s < kBlockSize; s *= 2) {
      if (tid + s < kBlockSize) tile[tid] += tile[tid + s];  // races with thread tid + s's write
      __syncthreads();
    }
  } else if constexpr (S == Step::interleaved_divergent) {
    for (unsigned s = 1; s < kBlockSize; s *= 2) {
      if (tid % (2 * s) == 0) tile[tid] += tile[tid + s];
      __syncthreads();
    }
  } else if constexpr (S == Step::interleaved_strided) {
    for (unsigned s = 1; s < kBlockSize; s *= 2) {
      const unsigned index = 2 * s * tid;
      if (index < kBlockSize) tile[index] += tile[index + s];
      __syncthreads();
    }
  } else if constexpr (S == Step::sequential || S == Step::first_add_on_load) {
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (tid < s) tile[tid] += tile[tid + s];
      __syncthreads();
    }
  } else if constexpr (S == Step::unrolled_last_warp) {
    // The loop bound comes from blockDim at run time, so the compiler cannot unroll it.
    for (unsigned s = blockDim.x / 2; s > kWarpSize; s >>= 1) {
      if (tid < s) tile[tid] += tile[tid + s];
      __syncthreads();
    }
    if (tid < kWarpSize) tile[tid] = warp_sum(tile[tid] + tile[tid + kWarpSize]);
  } else {  // complete_unroll: kBlockSize is a compile-time constant, every step is unrolled
#pragma unroll
    for (unsigned s = kBlockSize / 2; s > kWarpSize; s >>= 1) {
      if (tid < s) tile[tid] += tile[tid + s];
      __syncthreads();
    }
    if (tid < kWarpSize) tile[tid] = warp_sum(tile[tid] + tile[tid + kWarpSize]);
  }
  if (tid == 0) partials[blockIdx.x] = static_cast<T>(tile[0]);
}

template <typename T, Step S>
void launch(const ReduceArgs<T>& args, cudaStream_t stream) {
  constexpr std::int64_t kPerBlock = loads_two(S) ? 2 * kBlockSize : kBlockSize;
  reduce_in_passes<T>(
      args.in, args.n, args.out, carve<T>(args),
      [](std::int64_t count) { return ceil_div<std::int64_t>(count, kPerBlock); },
      [](const T* source, std::int64_t count, T* destination, std::int64_t blocks, cudaStream_t s) {
        reduce_shared_tree_kernel<T, S><<<grid_of(blocks), kBlockSize, 0, s>>>(source, count, destination);
        CUDALAB_CHECK_LAUNCH();
      },
      stream);
}

}  // namespace
}  // namespace cudalab::reduce_variants
