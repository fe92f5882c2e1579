// Register-level prefix sums for a warp and for a block, written once for every op that needs a
// scan (prefix sum, stream compaction, ...). They add with `+`, so T is any arithmetic type; for
// integers the sums wrap as the type's addition does.
#pragma once

#include <cuda_runtime.h>

#include "core/warp.cuh"

namespace cudalab {

// Inclusive sum over the 32 lanes of a warp: five shuffle steps (Kogge-Stone), no shared memory
// and no barrier. Every lane of the warp must call it.
template <typename T>
__device__ __forceinline__ T warp_inclusive_scan(T value) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
#pragma unroll
  for (int offset = 1; offset < kWarpSize; offset *= 2) {
    const T neighbour = __shfl_up_sync(kFullWarpMask, value, offset);
    if (lane >= offset) value += neighbour;
  }
  return value;
}

// The exclusive counterpart from an inclusive result: lane i gets lane i-1's value, lane 0 gets 0.
// Shifting (rather than subtracting the lane's own value) keeps fp32 results exact to the sums.
template <typename T>
__device__ __forceinline__ T warp_exclusive_from_inclusive(T inclusive) {
  const T previous = __shfl_up_sync(kFullWarpMask, inclusive, 1);
  return threadIdx.x % 32 == 0 ? T(0) : previous;
}

// Combines one total per warp across a block of Warps warps (blockDim.x == 32 * Warps): returns
// the sum of the totals of the warps before the caller's, and the block's total in *block_total.
// Every thread must call it with its warp's total; it holds one barrier. `totals` is shared
// memory; it may be reused only after another barrier.
template <int Warps, typename T>
__device__ __forceinline__ T block_exclusive_scan_of_warp_totals(T warp_total, T (&totals)[Warps], T* block_total) {
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x % 32 == 0) totals[warp] = warp_total;
  __syncthreads();
  // Warps is small (a handful): each thread adds the broadcast totals itself, in the same order
  // in every thread, so all agree bit for bit on fp32 too.
  T before = T(0), total = T(0);
#pragma unroll
  for (int w = 0; w < Warps; ++w) {
    if (w == warp) before = total;
    total += totals[w];
  }
  *block_total = total;
  return before;
}

}  // namespace cudalab
