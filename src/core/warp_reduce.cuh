// Warp- and block-wide sums, written once for every op that reduces. Warp sums use register
// shuffles (no shared memory, no barrier); the block sum reduces each warp, parks one value per
// warp in shared memory, and lets the first warp finish.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "core/warp.cuh"

namespace cudalab {

// Sum of `value` over the 32 lanes; every lane returns the total (butterfly, xor shuffles).
template <typename T>
__device__ __forceinline__ T warp_sum(T value) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(kFullWarpMask, value, offset);
  return value;
}

// Sum of `value` over a block of BlockSize threads; the result is valid in thread 0 only.
// `scratch` must hold BlockSize / 32 values. Contains a __syncthreads(): call it from every thread.
template <int BlockSize, typename T>
__device__ __forceinline__ T block_sum(T value, T* scratch) {
  static_assert(BlockSize % kWarpSize == 0 && BlockSize <= 1024, "block size must be a multiple of 32, at most 1024");
  constexpr int kWarps = BlockSize / kWarpSize;
  value = warp_sum(value);
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < kWarps ? scratch[lane] : T{};
    value = warp_sum(value);
  }
  return value;
}

}  // namespace cudalab
