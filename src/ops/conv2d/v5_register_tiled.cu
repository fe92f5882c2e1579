#include <cstdint>

#include "core/vector.cuh"
#include "core/warp.cuh"
#include "cudalab/conv2d.hpp"
#include "ops/conv2d/common.cuh"

namespace cudalab::conv2d_variants {
namespace {

constexpr int kBlockX = kWarpSize;
constexpr int kBlockY = 8;
constexpr int kColumnsPerThread = 4;                       // one float4 of outputs per row
constexpr int kTileColumns = kBlockX * kColumnsPerThread;  // 128 outputs wide per block
// The tile's float4 groups per row: one left of the outputs for the left halo, 32 under them, one
// right of them for the right halo (a halo of R/2 <= 3 columns fits in one group).
constexpr int kTileGroups = kTileColumns / 4 + 2;
static_assert(kMaxFilterWidth / 2 < 4, "the halo must fit in one float4 group on each side");

// Block: 32 x 8 threads; tile: 128 columns x (8 * kRows) rows of outputs. Thread (tx, ty) owns
// columns x0 + 4tx .. +3 of rows y0 + ty*kRows .. +kRows-1. The tile and the vector paths use
// float4 directly rather than Vector16<float>: the global loads go through __ldg (the read-only
// path, LDG.E.128.CONSTANT) and the shared tile is read a field at a time.
template <int R, int kRows>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    conv2d_register_tiled_kernel(Conv2dArgs<float> args, bool vector_loads, bool vector_stores) {
  constexpr int kHalf = R / 2;
  constexpr int kTileRows = kBlockY * kRows + R - 1;
  // Group g of tile row r holds input columns x0 + 4(g-1) .. +3 of row y0 + r - R/2.
  __shared__ float4 tile[kTileRows * kTileGroups];
  const std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * kTileColumns;
  const std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * kBlockY * kRows;

  // Every lane reads the same tap: one broadcast load per tap, then registers.
  float taps[R][R];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int t = 0; t < R; ++t) taps[i][t] = __ldg(args.filter + i * R + t);

  for (int index = threadIdx.y * kBlockX + threadIdx.x; index < kTileRows * kTileGroups; index += kBlockX * kBlockY) {
    const std::int64_t row = y0 + index / kTileGroups - kHalf;
    const std::int64_t column = x0 + 4 * (index % kTileGroups - 1);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row >= 0 && row < args.height) {
      const float* source = args.input + row * args.input_pitch;
      if (vector_loads && column >= 0 && column + 3 < args.width) {
        v = __ldg(reinterpret_cast<const float4*>(source + column));
      } else {
        // The image's edges (and every group of an unaligned image): element by element, zero
        // outside.
        float* lanes = &v.x;
        for (int k = 0; k < 4; ++k)
          if (column + k >= 0 && column + k < args.width) lanes[k] = source[column + k];
      }
    }
    tile[index] = v;
  }
  __syncthreads();

  float sums[kRows][kColumnsPerThread] = {};
  const int first_row = threadIdx.y * kRows;
  // Input row j of the thread's window feeds output rows r = j - i for every filter row i.
#pragma unroll
  for (int j = 0; j < kRows + R - 1; ++j) {
    const float4* groups = tile + (first_row + j) * kTileGroups + threadIdx.x;
    const float4 left = groups[0], own = groups[1], right = groups[2];
    // values[m] is input column x0 + 4tx - 4 + m.
    const float values[12] = {left.x, left.y, left.z,  left.w,  own.x,   own.y,
                              own.z,  own.w,  right.x, right.y, right.z, right.w};
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int i = j - r;
      if (i < 0 || i >= R) continue;
#pragma unroll
      for (int t = 0; t < R; ++t)
#pragma unroll
        for (int k = 0; k < kColumnsPerThread; ++k) sums[r][k] += values[4 + k + t - kHalf] * taps[i][t];
    }
  }

  const std::int64_t x = x0 + kColumnsPerThread * threadIdx.x;
  if (x >= args.width) return;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t y = y0 + first_row + r;
    if (y >= args.height) return;
    float* target = args.output + y * args.output_pitch + x;
    if (vector_stores && x + 3 < args.width) {
      *reinterpret_cast<float4*>(target) = make_float4(sums[r][0], sums[r][1], sums[r][2], sums[r][3]);
    } else {
      for (int k = 0; k < kColumnsPerThread && x + k < args.width; ++k) target[k] = sums[r][k];
    }
  }
}

// Every row starts 16-byte aligned: an aligned base and a pitch of whole 16-byte vectors.
bool rows_are_aligned16(const float* pointer, std::int64_t pitch) {
  return is_aligned16(pointer) && pitch % Vector16<float>::kCount == 0;
}

template <int R, int kRows>
void launch(const Conv2dArgs<float>& args, cudaStream_t stream) {
  const std::int64_t row_blocks = ceil_div<std::int64_t>(args.height, kBlockY * kRows);
  CUDALAB_REQUIRE(row_blocks <= 65535,
                  "conv2d: " + std::to_string(args.height) + " rows exceed the grid's 65535 tiles");
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.width, kTileColumns)),
                  static_cast<unsigned>(row_blocks));
  conv2d_register_tiled_kernel<R, kRows><<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(
      args, rows_are_aligned16(args.input, args.input_pitch), rows_are_aligned16(args.output, args.output_pitch));
  CUDALAB_CHECK_LAUNCH();
}

template <int kRows>
void launch_for_width(const Conv2dArgs<float>& args, cudaStream_t stream) {
  switch (args.filter_width) {
    case 1: return launch<1, kRows>(args, stream);
    case 3: return launch<3, kRows>(args, stream);
    case 5: return launch<5, kRows>(args, stream);
    case 7: return launch<7, kRows>(args, stream);
    default:
      CUDALAB_REQUIRE(
          false, "conv2d: register_tiled takes filter widths 1, 3, 5 and 7, got " + std::to_string(args.filter_width));
  }
}

}  // namespace

void register_tiled(const Conv2dArgs<float>& args, cudaStream_t stream) { launch_for_width<4>(args, stream); }

void register_tiled_tall(const Conv2dArgs<float>& args, cudaStream_t stream) { launch_for_width<8>(args, stream); }

std::int64_t register_tiled_max_height() { return std::int64_t{65535} * kBlockY * 4; }
static_assert(std::int64_t{65535} * kBlockY * 4 == kMaxConv2dHeight, "conv2d.hpp's row limit is this grid's");

}  // namespace cudalab::conv2d_variants
