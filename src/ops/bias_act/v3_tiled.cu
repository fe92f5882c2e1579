// Rung `tiled`: fused, 2-D tiles of 32 rows by 32 16-byte column vectors (32 x 256 bf16/fp16 or 32 x 128
// fp32 elements), one tile per block, blocks numbered column-tile fastest. Fixes: rung `vectorized`'s bias
// reload (each thread's column is fixed, so its bias vector is loaded once and kept in registers)
// and its spread-out request window (blocks are dispatched in address order, a band of 32 rows at a
// time, so the GPU streams through x and y as one front, the pattern that gave the reduce ladder
// its last few percent), with 4 rows' x vectors per thread issued before the first is used. Costs:
// a block launch per 16 KiB (bf16) of x; lanes past the row end idle when features / (16 / sizeof T)
// is not a multiple of 32 (at 1000 bf16 features, 3 of 128 lanes); rows that are not 16-byte
// aligned (features not a multiple of 16 / sizeof T) go to rung `vectorized`, which gathers the bias.
#include <algorithm>
#include <cstdint>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/activations.hpp"
#include "cudalab/error.hpp"
#include "ops/bias_act/activation.cuh"
#include "ops/bias_act/variants.hpp"

namespace cudalab::bias_act_variants {
namespace {

constexpr int kLanes = 32;         // column vectors per tile: a warp reads 512 contiguous bytes of a row
constexpr int kRowLanes = 8;       // warps per block, each on its own rows
constexpr int kRowsPerThread = 4;  // x vectors a thread has in flight
constexpr int kTileRows = kRowLanes * kRowsPerThread;
constexpr int kMaxGridY = 65535;  // past 65535 row tiles, blocks loop over tiles

template <typename T, typename Act>
__global__ void __launch_bounds__(kLanes* kRowLanes)
    bias_act_tiled_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y, std::int64_t rows,
                          std::int64_t features) {
  constexpr int V = kVectorWidth<T>;
  const std::int64_t column = (static_cast<std::int64_t>(blockIdx.x) * kLanes + threadIdx.x) * V;
  if (column >= features) return;
  float b[V];
  load_as_float<V>(bias + column, b);
  const std::int64_t tile_stride = static_cast<std::int64_t>(gridDim.y) * kTileRows;
  for (std::int64_t tile = static_cast<std::int64_t>(blockIdx.y) * kTileRows; tile < rows; tile += tile_stride) {
    Elements<T, V> in[kRowsPerThread];
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
      const std::int64_t row = tile + threadIdx.y + k * kRowLanes;
      if (row < rows) in[k] = load_elements<V>(x + row * features + column);
    }
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
      const std::int64_t row = tile + threadIdx.y + k * kRowLanes;
      if (row >= rows) break;
      float v[V];
      widen<V, T>(in[k], v);
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = Act::forward(v[e] + b[e]);
      store_as<V>(y + row * features + column, v);
    }
  }
}

}  // namespace

template <typename T>
void tiled(const BiasActArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  constexpr int V = kVectorWidth<T>;
  if (args.features % V != 0 || !is_aligned16(args.x) || !is_aligned16(args.bias) || !is_aligned16(args.y)) {
    vectorized(args, stream);
    return;
  }
  const std::int64_t column_tiles = ceil_div<std::int64_t>(args.features / V, kLanes);
  CUDALAB_REQUIRE(column_tiles <= 0x7fffffff, "bias_act tiled: features needs more than 2^31 - 1 column tiles");
  const std::int64_t row_tiles = std::min<std::int64_t>(ceil_div<std::int64_t>(args.rows, kTileRows), kMaxGridY);
  const dim3 grid(static_cast<unsigned>(column_tiles), static_cast<unsigned>(row_tiles));
  const dim3 block(kLanes, kRowLanes);
  with_activation<T>(args.activation, [&](auto activation) {
    bias_act_tiled_kernel<T, decltype(activation)>
        <<<grid, block, 0, stream>>>(args.x, args.bias, args.y, args.rows, args.features);
  });
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_BIAS_ACT_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, tiled, BiasActArgs)

}  // namespace cudalab::bias_act_variants
