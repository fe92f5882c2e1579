// The register tile of reduce_then_scan and decoupled_lookback: Threads * Items consecutive
// elements per block, scanned with warp shuffles, loaded and stored in 16-byte vectors.
#pragma once

#include <cstdint>

#include "core/block_scan.cuh"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {

template <typename T>
struct Vector4;
template <>
struct Vector4<std::int32_t> {
  using type = int4;
};
template <>
struct Vector4<float> {
  using type = float4;
};

__host__ __device__ inline bool aligned16(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0;
}

// Warp w of the block owns the contiguous segment [w * 32 * Items, (w + 1) * 32 * Items) of the
// tile, read as Items/4 rows of 128 elements: in row r, lane l holds elements r*128 + 4l .. 4l+3 of
// the segment. Each load or store instruction of a warp therefore moves 512 contiguous bytes, and
// the scan needs no shared-memory transpose: every row is scanned across the warp with shuffles
// and the rows are chained by a running carry that every lane keeps.
template <typename T, int Threads, int Items>
struct WarpRowTile {
  static_assert(Threads % 32 == 0 && Threads <= 1024, "a block of whole warps");
  static_assert(Items % 4 == 0, "a row is one 16-byte vector of 4 elements per lane");
  static constexpr int kWarps = Threads / 32;
  static constexpr int kRows = Items / 4;
  static constexpr int kWarpItems = 32 * Items;
  static constexpr int kItems = Threads * Items;

  T value[kRows][4];

  __device__ static int lane() { return static_cast<int>(threadIdx.x) % 32; }
  __device__ static int warp() { return static_cast<int>(threadIdx.x) / 32; }
  // Position within the tile of value[row][j] of the calling thread.
  __device__ static int position(int row, int j) { return warp() * kWarpItems + row * 128 + lane() * 4 + j; }

  // The tile starting at `tile_in` has `valid` elements (kItems except in the last tile); the
  // others read as 0. `vectorized`: the tile is full and tile_in is 16-byte aligned.
  __device__ void load(const T* tile_in, int valid, bool vectorized) {
    if (vectorized) {
      using V = typename Vector4<T>::type;
      const V* in = reinterpret_cast<const V*>(tile_in + warp() * kWarpItems) + lane();
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const V v = in[r * 32];
        value[r][0] = v.x;
        value[r][1] = v.y;
        value[r][2] = v.z;
        value[r][3] = v.w;
      }
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int p = position(r, j);
          value[r][j] = p < valid ? tile_in[p] : T(0);
        }
    }
  }

  __device__ void store(T* tile_out, int valid, bool vectorized) const {
    if (vectorized) {
      using V = typename Vector4<T>::type;
      V* out = reinterpret_cast<V*>(tile_out + warp() * kWarpItems) + lane();
#pragma unroll
      for (int r = 0; r < kRows; ++r) out[r * 32] = V{value[r][0], value[r][1], value[r][2], value[r][3]};
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int p = position(r, j);
          if (p < valid) tile_out[p] = value[r][j];
        }
    }
  }

  __device__ T thread_sum() const {
    T sum = T(0);
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j) sum += value[r][j];
    return sum;
  }

  // Replaces each element by its prefix sum within the warp's segment (inclusive or exclusive of
  // the element) and returns the segment's total, the same in every lane.
  template <ScanKind Kind>
  __device__ T scan_warp_segment() {
    T lane_inclusive[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int j = 1; j < 4; ++j) value[r][j] += value[r][j - 1];
      lane_inclusive[r] = value[r][3];
    }
    // The rows' warp scans are independent, so their shuffles overlap once unrolled.
#pragma unroll
    for (int r = 0; r < kRows; ++r) lane_inclusive[r] = warp_inclusive_scan(lane_inclusive[r]);
    T carry = T(0);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const T offset = carry + warp_exclusive_from_inclusive(lane_inclusive[r]);
#pragma unroll
      for (int j = 0; j < 4; ++j) value[r][j] = offset + value[r][j];
      carry += __shfl_sync(0xffffffffu, lane_inclusive[r], 31);
    }
    // The exclusive scan is the inclusive one moved one element later, so element p is exactly
    // the inclusive result of p - 1 (for fp32 too). Moving it after the scan, rather than
    // shifting each lane's four elements before, keeps the int32 instantiation at the inclusive
    // one's register count (ptxas: 56, not 70), so 9 blocks fit on an SM, not 7.
    if (Kind == ScanKind::exclusive) {
#pragma unroll
      for (int r = kRows - 1; r >= 0; --r) {
        const T from_lane_before = __shfl_up_sync(0xffffffffu, value[r][3], 1);
        const T row_before = r > 0 ? __shfl_sync(0xffffffffu, value[r > 0 ? r - 1 : 0][3], 31) : T(0);
#pragma unroll
        for (int j = 3; j > 0; --j) value[r][j] = value[r][j - 1];
        value[r][0] = lane() == 0 ? row_before : from_lane_before;
      }
    }
    return carry;
  }

  __device__ void add(T offset) {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j) value[r][j] = offset + value[r][j];
  }
};

}  // namespace cudalab::scan_variants
