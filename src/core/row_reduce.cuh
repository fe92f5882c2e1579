// The reductions every row op builds on (norms, softmax, attention's row softmax, the reduce
// ladder's block sums): one xor butterfly over a lane group (a warp or an aligned part of one), a
// block reduction on top of it (each warp's result parked in shared memory, then finished by the
// first warp or by every warp), and a thread's share of a row held in registers. Each is
// templated on its operator: a sum and a max are the same tree. The order of every combine is
// fixed, so equal inputs give equal bits. The cluster step (one value per CTA through
// distributed shared memory, folded in rank order) is ClusterInbox in core/cluster.cuh.
#pragma once

#include <type_traits>

#include <cuda_runtime.h>

#include "core/vector.cuh"
#include "core/warp.cuh"

namespace cudalab {

struct SumOf {
  template <typename V>
  __device__ __forceinline__ V operator()(V a, V b) const {
    return a + b;
  }
};
struct MaxOf {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// `value` as held by the lane whose index differs from this one's in the bits of `offset`. A
// struct reduced over lanes (online softmax's (max, sum) pair) gives its own overload beside it,
// which group_reduce finds by argument-dependent lookup.
template <typename V>
__device__ __forceinline__ V shuffle_xor(V value, int offset) {
  static_assert(std::is_arithmetic_v<V>, "a struct shuffles through its own overload");
  return __shfl_xor_sync(kFullWarpMask, value, offset);
}

// Reduces over aligned groups of kWidth lanes (a power of two up to 32) by xor shuffles, so every
// lane gets its group's result, combined in the same order on every lane. Every lane of the warp
// must call it.
template <int kWidth, typename V, typename Op>
__device__ __forceinline__ V group_reduce(V value, Op op) {
  static_assert(kWidth >= 1 && kWidth <= kWarpSize && (kWidth & (kWidth - 1)) == 0, "a power of two up to 32");
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2) value = op(value, shuffle_xor(value, offset));
  return value;
}

// Sum of `value` over the 32 lanes; every lane returns the total.
template <typename T>
__device__ __forceinline__ T warp_sum(T value) {
  return group_reduce<kWarpSize>(value, SumOf{});
}

// Where a block reduction's result ends up, and what the next call may assume:
//   first_warp: in the first warp only, no barrier after it (one thread writes the result).
//   broadcast:  in every thread; the first warp's result passes through scratch[kWarps] behind one
//               more barrier. Calls may follow one another with no barrier between them: every
//               thread reads a total before it arrives at the next call's barrier, and thread 0
//               overwrites it only after that barrier.
//   every_warp: in every thread; each warp finishes from the parked values itself (no broadcast
//               step), then a barrier lets the next call reuse scratch.
enum class BlockResult { first_warp, broadcast, every_warp };

// The reduction of `value` over a block of kWarps warps (blockDim.x == 32 * kWarps), or of
// blockDim.x / 32 warps where kWarps is 0 (read where it is used: read ahead of the first
// barrier, it changed the code ptxas made of the caller's loop before it). `scratch` is shared memory
// for one value per warp (broadcast: one more); `identity` fills the finishing warp's lanes past
// the last warp. Holds __syncthreads(): every thread must call it.
template <BlockResult kResult, int kWarps, typename V, typename Op>
__device__ __forceinline__ V block_reduce(V value, Op op, V identity, V* scratch) {
  static_assert(kWarps >= 0 && kWarps <= kWarpSize, "at most 32 warps");
  static_assert(kResult != BlockResult::broadcast || kWarps > 0, "broadcast parks its total after a known count");
  // The lane and warp are taken before the warp's reduction for every_warp and after it for the
  // others: the order each form was measured with (ptxas schedules the two differently).
  const auto reduce_warp = [&] { value = group_reduce<kWarpSize>(value, op); };
  if constexpr (kResult != BlockResult::every_warp) reduce_warp();
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  if constexpr (kResult == BlockResult::every_warp) reduce_warp();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  const auto partial = [&] {
    const int warps = kWarps > 0 ? kWarps : static_cast<int>(blockDim.x / kWarpSize);
    return lane < warps ? scratch[lane] : identity;
  };
  if constexpr (kResult == BlockResult::every_warp) {
    value = group_reduce<kWarpSize>(partial(), op);
    __syncthreads();
    return value;
  } else {
    if (warp == 0) value = group_reduce<kWarpSize>(partial(), op);
    if constexpr (kResult == BlockResult::first_warp) {
      return value;
    } else {
      if (threadIdx.x == 0) scratch[kWarps] = value;
      __syncthreads();
      return scratch[kWarps];
    }
  }
}

// Sum of `value` over a block of BlockSize threads; the result is valid in thread 0 only.
// `scratch` must hold BlockSize / 32 values.
template <int BlockSize, typename T>
__device__ __forceinline__ T block_sum(T value, T* scratch) {
  static_assert(BlockSize % kWarpSize == 0 && BlockSize <= 1024, "block size must be a multiple of 32, at most 1024");
  return block_reduce<BlockResult::first_warp, BlockSize / kWarpSize>(value, SumOf{}, T{}, scratch);
}

// ---- a thread's share of a row in registers ------------------------------------------------------
// kVectors vectors of kVec elements (a 16-byte vector, or 1 where rows are not 16-byte aligned),
// widened to fp32: vector k at share.offset(k) elements from the row's start, present where
// share.has(k); an absent vector is not read and holds `fill`. The share is the layout: which
// columns a thread holds and how their bounds are checked. All loads are issued before any value
// is used: kVectors requests in flight per thread.
template <int kVec, int kVectors, typename Share, typename T>
__device__ __forceinline__ void load_share(const T* row, const Share& share, float fill, float* values) {
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    if (share.has(k)) {
      load_floats<kVec>(row + share.offset(k), &values[k * kVec]);
    } else {
#pragma unroll
      for (int i = 0; i < kVec; ++i) values[k * kVec + i] = fill;
    }
  }
}

// The present vectors of `values` rounded to T and stored as load_share reads them.
template <int kVec, int kVectors, typename Share, typename T>
__device__ __forceinline__ void store_share(T* row, const Share& share, const float* values) {
#pragma unroll
  for (int k = 0; k < kVectors; ++k)
    if (share.has(k)) store_floats<kVec>(row + share.offset(k), &values[k * kVec]);
}

}  // namespace cudalab
