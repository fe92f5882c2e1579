// The register tile of reduce_then_scan and decoupled_lookback (and of the single-pass stream
// compactions): Threads * Items consecutive elements per block, scanned with warp shuffles, loaded
// and stored in 16-byte vectors.
#pragma once

#include <cstdint>

#include "core/block_scan.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {

// Warp w of the block owns the contiguous segment [w * 32 * Items, (w + 1) * 32 * Items) of the
// tile, read as rows of 32 16-byte vectors: in row r, lane l holds the kVector elements from
// r * kRowItems + l * kVector on of the segment (4 per lane for 4-byte elements). Each load or
// store instruction of a warp therefore moves 512 contiguous bytes, and the scan needs no
// shared-memory transpose: every row is scanned across the warp with shuffles and the rows are
// chained by a running carry that every lane keeps.
template <typename T, int Threads, int Items>
struct WarpRowTile {
  static_assert(Threads % kWarpSize == 0 && Threads <= 1024, "a block of whole warps");
  static constexpr int kVector = Vector16<T>::kCount;
  static_assert(Items % kVector == 0, "a row is one 16-byte vector per lane");
  static constexpr int kWarps = Threads / kWarpSize;
  static constexpr int kRows = Items / kVector;
  static constexpr int kRowItems = kWarpSize * kVector;
  static constexpr int kWarpItems = kWarpSize * Items;
  static constexpr int kItems = Threads * Items;

  T value[kRows][kVector];

  __device__ static int lane() { return static_cast<int>(threadIdx.x) % kWarpSize; }
  __device__ static int warp() { return static_cast<int>(threadIdx.x) / kWarpSize; }
  // Position within the tile of value[row][j] of the calling thread.
  __device__ static int position(int row, int j) {
    return warp() * kWarpItems + row * kRowItems + lane() * kVector + j;
  }

  // The tile starting at `tile_in` has `valid` elements (kItems except in the last tile); the
  // others read as 0. `vectorized`: the tile is full and tile_in is 16-byte aligned.
  __device__ void load(const T* tile_in, int valid, bool vectorized) {
    if (vectorized) {
      // Stepping through whole vectors keeps the address arithmetic to one 64-bit multiply; in
      // elements it costs the exclusive int32 scan 4 registers (ptxas: 60, not 56), a block per SM.
      const auto* in = reinterpret_cast<const Vector16<T>*>(tile_in + warp() * kWarpItems) + lane();
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const Vector16<T> v = load_vector16(reinterpret_cast<const T*>(in + r * kWarpSize));
#pragma unroll
        for (int j = 0; j < kVector; ++j) value[r][j] = v[j];
      }
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int j = 0; j < kVector; ++j) {
          const int p = position(r, j);
          value[r][j] = p < valid ? tile_in[p] : T(0);
        }
    }
  }

  __device__ void store(T* tile_out, int valid, bool vectorized) const {
    if (vectorized) {
      auto* out = reinterpret_cast<Vector16<T>*>(tile_out + warp() * kWarpItems) + lane();
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        Vector16<T> v;
#pragma unroll
        for (int j = 0; j < kVector; ++j) v[j] = value[r][j];
        store_vector16(reinterpret_cast<T*>(out + r * kWarpSize), v);
      }
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int j = 0; j < kVector; ++j) {
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
      for (int j = 0; j < kVector; ++j) sum += value[r][j];
    return sum;
  }

  // Replaces each element by its prefix sum within the warp's segment (inclusive or exclusive of
  // the element) and returns the segment's total, the same in every lane.
  template <ScanKind Kind>
  __device__ T scan_warp_segment() {
    constexpr int kLast = kVector - 1;
    T lane_inclusive[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int j = 1; j < kVector; ++j) value[r][j] += value[r][j - 1];
      lane_inclusive[r] = value[r][kLast];
    }
    // The rows' warp scans are independent, so their shuffles overlap once unrolled.
#pragma unroll
    for (int r = 0; r < kRows; ++r) lane_inclusive[r] = warp_inclusive_scan(lane_inclusive[r]);
    T carry = T(0);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const T offset = carry + warp_exclusive_from_inclusive(lane_inclusive[r]);
#pragma unroll
      for (int j = 0; j < kVector; ++j) value[r][j] = offset + value[r][j];
      carry += __shfl_sync(kFullWarpMask, lane_inclusive[r], kWarpSize - 1);
    }
    // The exclusive scan is the inclusive one moved one element later, so element p is exactly
    // the inclusive result of p - 1 (for fp32 too). Moving it after the scan, rather than
    // shifting each lane's elements before, keeps the int32 instantiation at the inclusive one's
    // register count (ptxas: 56, not 70), so 9 blocks fit on an SM, not 7.
    if (Kind == ScanKind::exclusive) {
#pragma unroll
      for (int r = kRows - 1; r >= 0; --r) {
        const T from_lane_before = __shfl_up_sync(kFullWarpMask, value[r][kLast], 1);
        const T row_before = r > 0 ? __shfl_sync(kFullWarpMask, value[r > 0 ? r - 1 : 0][kLast], kWarpSize - 1) : T(0);
#pragma unroll
        for (int j = kLast; j > 0; --j) value[r][j] = value[r][j - 1];
        value[r][0] = lane() == 0 ? row_before : from_lane_before;
      }
    }
    return carry;
  }

  __device__ void add(T offset) {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < kVector; ++j) value[r][j] = offset + value[r][j];
  }
};

}  // namespace cudalab::scan_variants
