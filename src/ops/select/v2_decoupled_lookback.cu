// The single-pass compactions: decoupled_lookback (selected elements stored from registers) and
// decoupled_lookback_staged (packed in shared memory first). One kernel template serves both, so
// the two differ in the store path alone.
#include <climits>

#include "core/block_scan.cuh"
#include "core/decoupled_lookback.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "ops/scan/tile.cuh"
#include "ops/scan/variants.hpp"
#include "ops/select/variants.hpp"

namespace cudalab::select_variants {
namespace {

using lookback::StatusWord;

// A launch shape: Threads x Items elements per tile, in the scan's register layout (each warp's
// segment read as rows of 16-byte vectors, 512 contiguous bytes per load instruction).
template <int ThreadCount, int ItemCount>
struct Shape {
  static constexpr int kThreads = ThreadCount;
  using Tile = scan_variants::WarpRowTile<std::int32_t, ThreadCount, ItemCount>;
  static constexpr int kTileItems = Tile::kItems;
  static_assert(Tile::kRows <= 32 && kTileItems < (1 << 16), "per-tile counts and ranks fit in an int");
  static std::int64_t tiles(std::int64_t n) { return ceil_div<std::int64_t>(n, kTileItems); }
};

// Stores from registers: the scan's shape, 128 x 32 (4096 elements), 70 registers.
using DirectShape = Shape<128, 32>;
// Staged: 256 x 32 (8192 elements, 32 KiB of shared memory, 64 registers, 4 blocks per SM). On an
// H100 at 2^28 (medians, us, one run; CUB 694 / 480 / 883 at 50% / 0% / 100% kept): 256 x 32 691 /
// 454 / 842, 128 x 64 692 / 466 / 842, 128 x 48 704 / 470 / 854, 128 x 32 700 / 476 / 849,
// 128 x 24 708 / 495 / 862, 256 x 16 740 / 508 / 913. Larger tiles halve the look-backs and put
// more bytes in flight per block; 128 x 32 with no first-look wait (727 / 535 / 871) or a 400 ns
// one (708 / 494 / 863) lost to the scan's 1 us.
using StagedShape = Shape<256, 32>;

// Tile t covers in[t * S::kTileItems, ...) and writes its kept elements to out[prefix, prefix + kept),
// prefix being the number kept by tiles 0..t-1. Each lane keeps, per row, a 4-bit mask of which of
// its 4 elements are kept; a popcount gives its count, warp shuffles the row offsets, and
// block_exclusive_scan_of_warp_totals the warp's offset within the tile, so an element's rank in
// the tile costs a popcount of the mask bits below it.
template <typename S, bool Staged>
__global__ void __launch_bounds__(S::kThreads)
    select_decoupled_lookback_kernel(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                                     std::int64_t* count, StatusWord* states, unsigned* tile_counter,
                                     std::int64_t tiles, bool aligned) {
  using Tile = typename S::Tile;
  constexpr int kTileItems = S::kTileItems;
  __shared__ int warp_totals[Tile::kWarps];
  __shared__ unsigned ticket;
  __shared__ std::int64_t prefix_shared;
  __shared__ std::int32_t staged[Staged ? kTileItems : 1];
  const auto valid_in = [n](std::int64_t t) {
    const std::int64_t left = n - t * kTileItems;
    return static_cast<int>(left < kTileItems ? left : kTileItems);
  };
  Tile items;
  const std::int64_t tile = lookback::take_tile_in_start_order(tile_counter, &ticket, [&](std::int64_t t) {
    items.load(in + t * kTileItems, valid_in(t), aligned && valid_in(t) == kTileItems);
  });
  const int valid = valid_in(tile);

  unsigned keep[Tile::kRows];
  int row_offset[Tile::kRows];
#pragma unroll
  for (int r = 0; r < Tile::kRows; ++r) {
    keep[r] = 0;
#pragma unroll
    for (int j = 0; j < Tile::kVector; ++j)
      if (Tile::position(r, j) < valid && selected(items.value[r][j], threshold)) keep[r] |= 1u << j;
    row_offset[r] = __popc(keep[r]);
  }
  // The rows' warp scans are independent, so their shuffles overlap once unrolled.
#pragma unroll
  for (int r = 0; r < Tile::kRows; ++r) row_offset[r] = warp_inclusive_scan(row_offset[r]);
  int warp_kept = 0;
#pragma unroll
  for (int r = 0; r < Tile::kRows; ++r) {
    const int row_total = __shfl_sync(kFullWarpMask, row_offset[r], kWarpSize - 1);
    row_offset[r] = warp_kept + warp_exclusive_from_inclusive(row_offset[r]);
    warp_kept += row_total;
  }
  int tile_kept;
  const int warps_before = block_exclusive_scan_of_warp_totals(warp_kept, warp_totals, &tile_kept);
  // Rank within the tile of element j of row r, when it is kept.
  const auto rank = [&](int r, int j) { return warps_before + row_offset[r] + __popc(keep[r] & ((1u << j) - 1)); };

  if constexpr (Staged) {
    // Packed before the look-back, so the shared-memory traffic overlaps the wait.
#pragma unroll
    for (int r = 0; r < Tile::kRows; ++r)
#pragma unroll
      for (int j = 0; j < Tile::kVector; ++j)
        if (keep[r] & (1u << j)) staged[rank(r, j)] = items.value[r][j];
  }

  if (tile == 0) {
    if (threadIdx.x == 0) {
      lookback::publish(states, lookback::pack(lookback::kPrefix, static_cast<std::int64_t>(tile_kept)));
      prefix_shared = 0;
    }
  } else if (threadIdx.x < kWarpSize) {
    const std::int64_t before = lookback::exclusive_prefix_of_tile(states, tile, static_cast<std::int64_t>(tile_kept));
    if (threadIdx.x == 0) prefix_shared = before;
  }
  // Publishes prefix_shared and, when staged, the packed tile.
  __syncthreads();
  const std::int64_t prefix = prefix_shared;
  if (tile == tiles - 1 && threadIdx.x == 0) *count = prefix + tile_kept;

  std::int32_t* const tile_out = out + prefix;
  if constexpr (Staged) {
    for (int i = static_cast<int>(threadIdx.x); i < tile_kept; i += S::kThreads) tile_out[i] = staged[i];
  } else {
#pragma unroll
    for (int r = 0; r < Tile::kRows; ++r)
#pragma unroll
      for (int j = 0; j < Tile::kVector; ++j)
        if (keep[r] & (1u << j)) tile_out[rank(r, j)] = items.value[r][j];
  }
}

template <typename S>
std::size_t workspace_bytes(std::int64_t n) {
  return n > 0 ? static_cast<std::size_t>(S::tiles(n) + 1) * sizeof(StatusWord) : 0;
}

template <typename S, bool Staged>
void launch(const SelectArgs<std::int32_t>& args, cudaStream_t stream) {
  const std::int64_t n = args.n;
  if (n == 0) {
    CUDALAB_CUDA_CHECK(cudaMemsetAsync(args.count, 0, sizeof *args.count, stream));
    return;
  }
  const std::int64_t tiles = S::tiles(n);
  CUDALAB_REQUIRE(tiles <= INT_MAX, "select decoupled_lookback: n needs more than 2^31-1 tiles");
  const std::size_t bytes = workspace_bytes<S>(n);
  auto* const words = static_cast<StatusWord*>(
      workspace_of(args, bytes, Staged ? "select decoupled_lookback_staged" : "select decoupled_lookback"));
  // Every status starts invalid and the counter at 0, on every launch: part of the selection's cost.
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(words, 0, bytes, stream));
  auto* const tile_counter = reinterpret_cast<unsigned*>(words);
  StatusWord* const states = words + 1;
  select_decoupled_lookback_kernel<S, Staged><<<static_cast<unsigned>(tiles), S::kThreads, 0, stream>>>(
      args.in, n, args.threshold, args.out, args.count, states, tile_counter, tiles, is_aligned16(args.in));
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

// Workspace: the tile counter in the first word, then one status word per tile.
std::size_t decoupled_lookback_workspace_bytes(std::int64_t n) { return workspace_bytes<DirectShape>(n); }
std::size_t decoupled_lookback_staged_workspace_bytes(std::int64_t n) { return workspace_bytes<StagedShape>(n); }

void decoupled_lookback(const SelectArgs<std::int32_t>& args, cudaStream_t stream) {
  launch<DirectShape, false>(args, stream);
}

void decoupled_lookback_staged(const SelectArgs<std::int32_t>& args, cudaStream_t stream) {
  launch<StagedShape, true>(args, stream);
}

}  // namespace cudalab::select_variants
