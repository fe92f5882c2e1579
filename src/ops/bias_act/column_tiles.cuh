// The backward's tile kernels, shared by the fused rung and the unfused baseline. Blocks of 32 x 8
// threads take tiles of 128 rows by 32 column vectors (16-byte vectors: 128 x 256 bf16/fp16 or
// 128 x 128 fp32 elements; single elements when rows are not 16-byte aligned), numbered
// column-tile fastest so the blocks in flight stream through the tensors as one front. Each thread
// owns one column vector and every 8th row of the tile, with 4 rows' vectors in flight. A pass:
//   fused:     dx = dy * act'(x + bias), written, and summed per column in fp32 (one read of x, dy)
//   dx_only:   the same dx, no sums (the unfused baseline's first kernel)
//   sum_only:  the column sums of a tensor (the baseline's second kernel, reading the dx it wrote)
// Summing passes write one fp32 partial per column per block row (its 8 row lanes meet in shared
// memory, added pairwise) to `partials`; core/column_sums.cuh, the scheme the norms' backward
// shares, then adds each column's partials in a fixed order and rounds dbias once. Every sum has a
// fixed order (16 rows per lane in sequence, the lane tree, the partials), so equal inputs give
// equal bits.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/column_sums.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/bias_act/activation.cuh"

namespace cudalab::bias_act_variants {

enum class TilePass { fused, dx_only, sum_only };

inline constexpr int kTileLanes = 32;        // column vectors per tile: a warp reads 512 contiguous bytes of a row
inline constexpr int kTileRowLanes = 8;      // warps per block, each on every 8th row of the tile
inline constexpr int kTileRowsInFlight = 4;  // rows whose vectors a thread loads before using the first
inline constexpr int kTileRows = 128;        // rows per partial sum: 16 sequential adds per lane
inline constexpr int kMaxRowTiles = 65535;   // grid.y's limit: past it, blocks loop over row tiles

static_assert(kTileRows % (kTileRowLanes * kTileRowsInFlight) == 0, "whole steps per tile");

// Blocks along the rows, and so partial sums per column.
inline std::int64_t row_tiles(std::int64_t rows) {
  return std::min<std::int64_t>(ceil_div<std::int64_t>(rows, kTileRows), kMaxRowTiles);
}

inline std::size_t partials_bytes(std::int64_t rows, std::int64_t features) {
  return static_cast<std::size_t>(row_tiles(rows)) * static_cast<std::size_t>(features) * sizeof(float);
}

// fused and dx_only read x, bias and dy and write dx; sum_only reads dy alone (the tensor to sum).
template <typename T, int V, typename Act, TilePass kPass>
__global__ void __launch_bounds__(kTileLanes* kTileRowLanes)
    bias_act_column_tiles_kernel(const T* __restrict__ x, const T* __restrict__ bias, const T* __restrict__ dy,
                                 T* __restrict__ dx, float* __restrict__ partials, std::int64_t rows,
                                 std::int64_t features) {
  constexpr bool kReadsX = kPass != TilePass::sum_only;
  constexpr bool kSums = kPass != TilePass::dx_only;
  const std::int64_t first_column = static_cast<std::int64_t>(blockIdx.x) * kTileLanes * V;
  const std::int64_t column = first_column + threadIdx.x * V;
  float sum[V] = {};
  if (column < features) {
    float b[V] = {};
    if constexpr (kReadsX) load_as_float<V>(bias + column, b);
    const std::int64_t tile_stride = static_cast<std::int64_t>(gridDim.y) * kTileRows;
    for (std::int64_t tile = static_cast<std::int64_t>(blockIdx.y) * kTileRows; tile < rows; tile += tile_stride) {
      const std::int64_t end = std::min(rows, tile + kTileRows);
      for (std::int64_t step = tile + threadIdx.y; step < end; step += kTileRowLanes * kTileRowsInFlight) {
        Elements<T, V> x_in[kTileRowsInFlight], dy_in[kTileRowsInFlight];
#pragma unroll
        for (int k = 0; k < kTileRowsInFlight; ++k) {
          const std::int64_t row = step + k * kTileRowLanes;
          if (row < end) {
            if constexpr (kReadsX) x_in[k] = load_elements<V>(x + row * features + column);
            dy_in[k] = load_elements<V>(dy + row * features + column);
          }
        }
#pragma unroll
        for (int k = 0; k < kTileRowsInFlight; ++k) {
          const std::int64_t row = step + k * kTileRowLanes;
          if (row >= end) break;
          float g[V];
          widen<V, T>(dy_in[k], g);
          if constexpr (kReadsX) {
            float v[V];
            widen<V, T>(x_in[k], v);
#pragma unroll
            for (int e = 0; e < V; ++e) g[e] *= Act::derivative(v[e] + b[e]);
            store_as<V>(dx + row * features + column, g);
          }
          if constexpr (kSums) {
#pragma unroll
            for (int e = 0; e < V; ++e) sum[e] += g[e];
          }
        }
      }
    }
  }
  if constexpr (kSums) {
    __shared__ float lane_sums[kTileRowLanes][kTileLanes * V];
#pragma unroll
    for (int e = 0; e < V; ++e) lane_sums[threadIdx.y][threadIdx.x * V + e] = sum[e];
    __syncthreads();
    for (int c = threadIdx.y * kTileLanes + threadIdx.x; c < kTileLanes * V; c += kTileLanes * kTileRowLanes) {
      const std::int64_t j = first_column + c;
      if (j < features) {
        const auto s = [&](int lane) { return lane_sums[lane][c]; };
        partials[blockIdx.y * features + j] = ((s(0) + s(1)) + (s(2) + s(3))) + ((s(4) + s(5)) + (s(6) + s(7)));
      }
    }
  }
}

// One pass over rows >= 1 rows: 16-byte vectors when every pointer the pass touches is 16-byte
// aligned and rows are (features a multiple of 16 / sizeof T), single elements otherwise.
template <typename T, typename Act, TilePass kPass>
void launch_column_tiles(const T* x, const T* bias, const T* dy, T* dx, float* partials, std::int64_t rows,
                         std::int64_t features, cudaStream_t stream) {
  constexpr int kWidth = kVectorWidth<T>;
  constexpr bool kReadsX = kPass != TilePass::sum_only;
  const bool vectors = features % kWidth == 0 && is_aligned16(dy) &&
                       (!kReadsX || (is_aligned16(x) && is_aligned16(bias) && is_aligned16(dx)));
  const int width = vectors ? kWidth : 1;
  const std::int64_t column_tiles = ceil_div<std::int64_t>(ceil_div<std::int64_t>(features, width), kTileLanes);
  CUDALAB_REQUIRE(column_tiles <= 0x7fffffff, "bias_act_backward: features needs more than 2^31 - 1 column tiles");
  const dim3 grid(static_cast<unsigned>(column_tiles), static_cast<unsigned>(row_tiles(rows)));
  const dim3 block(kTileLanes, kTileRowLanes);
  if (vectors) {
    bias_act_column_tiles_kernel<T, kWidth, Act, kPass>
        <<<grid, block, 0, stream>>>(x, bias, dy, dx, partials, rows, features);
  } else {
    bias_act_column_tiles_kernel<T, 1, Act, kPass>
        <<<grid, block, 0, stream>>>(x, bias, dy, dx, partials, rows, features);
  }
  CUDALAB_CHECK_LAUNCH();
}

// dbias from the partials of the row tiles of `rows` rows (rows == 0: no partials, dbias = 0, the
// empty sum).
template <typename T>
void launch_sum_partials(const float* partials, std::int64_t rows, std::int64_t features, T* dbias,
                         cudaStream_t stream) {
  launch_column_partials_sum(partials, rows == 0 ? 0 : row_tiles(rows), features, dbias, stream);
}

}  // namespace cudalab::bias_act_variants
