// Shared-memory tiled transposes. A block owns one 32x32 tile: it reads the tile's rows from
// the input (coalesced), then writes the tile's columns as rows of the output (coalesced), the
// turn happening in shared memory. What differs is the shared tile's layout (bank conflicts on
// the column read) and how many elements each thread moves.
#include "core/launch.cuh"
#include "core/warp.cuh"
#include "ops/transpose/variants.hpp"

namespace cudalab::transpose_variants {
namespace {

constexpr std::int64_t kMaxGridY = 65535;

enum class TileLayout { plain, padded, swizzled };

// Where element (row, col) of the tile sits in its shared row. The swizzle flips only the low
// five bits, so a 64-wide tile's element stays in its own 32-word half.
template <TileLayout kLayout>
__device__ __forceinline__ int tile_column(int row, int col) {
  return kLayout == TileLayout::swizzled ? (col ^ (row & 31)) : col;
}

// Block of one warp x kBlockRows; a kTile x kTile tile (kTile a multiple of 32), so each thread
// moves kTile * kTile / (32 kBlockRows) elements per tile, all loads issued before the barrier. A
// warp covers kTile / 32 runs of 128 contiguous bytes per row on both sides. grid.x covers the
// column tiles, grid.y loops over row tiles (at most 65535 blocks high).
template <TileLayout kLayout, int kTile, int kBlockRows>
__global__ void __launch_bounds__(kWarpSize* kBlockRows)
    transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t rows,
                           std::int64_t cols) {
  static_assert(kTile % kWarpSize == 0 && kTile % kBlockRows == 0,
                "the tile must be whole warps wide and block rows high");
  // [kTile][kTile + 1]: row r starts r banks further on, so a column's 32 words sit in 32 banks.
  __shared__ float tile[kTile][kTile + (kLayout == TileLayout::padded ? 1 : 0)];
  const int x = threadIdx.x;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const std::int64_t row_tiles = ceil_div<std::int64_t>(rows, kTile);
  for (std::int64_t row_tile = blockIdx.y; row_tile < row_tiles; row_tile += gridDim.y) {
    const std::int64_t row0 = row_tile * kTile;
#pragma unroll
    for (int j = threadIdx.y; j < kTile; j += kBlockRows) {
#pragma unroll
      for (int q = 0; q < kTile; q += kWarpSize) {
        const std::int64_t r = row0 + j, c = col0 + q + x;
        if (r < rows && c < cols) tile[j][tile_column<kLayout>(j, q + x)] = in[r * cols + c];
      }
    }
    __syncthreads();
    // Output row col0 + j holds input column col0 + j; its elements are the tile's column j.
#pragma unroll
    for (int j = threadIdx.y; j < kTile; j += kBlockRows) {
#pragma unroll
      for (int q = 0; q < kTile; q += kWarpSize) {
        const std::int64_t out_row = col0 + j, out_col = row0 + q + x;
        if (out_row < cols && out_col < rows)
          out[out_row * rows + out_col] = tile[q + x][tile_column<kLayout>(q + x, j)];
      }
    }
    __syncthreads();  // the next tile overwrites this one
  }
}

template <TileLayout kLayout, int kTile, int kBlockRows>
void launch_tiled(const TransposeArgs<float>& args, cudaStream_t stream) {
  const std::int64_t row_tiles = ceil_div<std::int64_t>(args.rows, kTile);
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.cols, kTile)),
                  static_cast<unsigned>(row_tiles < kMaxGridY ? row_tiles : kMaxGridY));
  transpose_tiled_kernel<kLayout, kTile, kBlockRows>
      <<<grid, dim3(kWarpSize, kBlockRows), 0, stream>>>(args.in, args.out, args.rows, args.cols);
  CUDALAB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void tiled(const TransposeArgs<float>& args, cudaStream_t stream) {
  launch_tiled<TileLayout::plain, 32, 32>(args, stream);
}
void padded(const TransposeArgs<float>& args, cudaStream_t stream) {
  launch_tiled<TileLayout::padded, 32, 32>(args, stream);
}
void swizzled(const TransposeArgs<float>& args, cudaStream_t stream) {
  launch_tiled<TileLayout::swizzled, 32, 32>(args, stream);
}
void padded_4_per_thread(const TransposeArgs<float>& args, cudaStream_t stream) {
  launch_tiled<TileLayout::padded, 32, 8>(args, stream);
}
void swizzled_4_per_thread(const TransposeArgs<float>& args, cudaStream_t stream) {
  launch_tiled<TileLayout::swizzled, 32, 8>(args, stream);
}
void swizzled_8_per_thread(const TransposeArgs<float>& args, cudaStream_t stream) {
  launch_tiled<TileLayout::swizzled, 32, 4>(args, stream);
}

void padded_64_tile(const TransposeArgs<float>& args, cudaStream_t stream) {
  launch_tiled<TileLayout::padded, 64, 8>(args, stream);
}
void swizzled_64_tile(const TransposeArgs<float>& args, cudaStream_t stream) {
  launch_tiled<TileLayout::swizzled, 64, 8>(args, stream);
}

}  // namespace cudalab::transpose_variants
