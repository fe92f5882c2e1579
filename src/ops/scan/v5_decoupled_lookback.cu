#include <climits>

#include "core/block_scan.cuh"
#include "core/decoupled_lookback.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "ops/scan/tile.cuh"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {
namespace {

// 128 threads x 32 elements (4096 per tile, 16 KiB of int32). On an H100 at 2^28 int32 this was
// 1% faster than 128 x 24 (CUB's Hopper shape) and 6% faster than 256 x 16: more bytes in flight
// per block and fewer tiles to chain.
constexpr int kThreads = 128;
constexpr int kItems = 32;

template <typename T>
using Tile = WarpRowTile<T, kThreads, kItems>;

using lookback::StatusWord;

template <ScanKind Kind, typename T>
__global__ void __launch_bounds__(kThreads)
    scan_decoupled_lookback_kernel(const T* in, T* out, std::int64_t n, StatusWord* states, unsigned* tile_counter,
                                   bool aligned) {
  __shared__ T warp_totals[Tile<T>::kWarps];
  __shared__ unsigned ticket;
  __shared__ T prefix_shared;
  constexpr int kTileItems = Tile<T>::kItems;
  const auto valid_in = [n](std::int64_t t) {
    const std::int64_t left = n - t * kTileItems;
    return static_cast<int>(left < kTileItems ? left : kTileItems);
  };
  Tile<T> items;
  const std::int64_t tile = lookback::take_tile_in_start_order(tile_counter, &ticket, [&](std::int64_t t) {
    items.load(in + t * kTileItems, valid_in(t), aligned && valid_in(t) == kTileItems);
  });
  const std::int64_t base = tile * kTileItems;
  const int valid = valid_in(tile);
  const bool vectorized = aligned && valid == kTileItems;

  const T warp_total = items.template scan_warp_segment<Kind>();
  T aggregate;
  const T warps_before = block_exclusive_scan_of_warp_totals(warp_total, warp_totals, &aggregate);

  T prefix = T(0);
  if (tile == 0) {
    if (threadIdx.x == 0) lookback::publish(states, lookback::pack(lookback::kPrefix, aggregate));
  } else {
    if (threadIdx.x < kWarpSize) {
      const T exclusive = lookback::exclusive_prefix_of_tile(states, tile, aggregate);
      if (threadIdx.x == 0) prefix_shared = exclusive;
    }
    __syncthreads();
    prefix = prefix_shared;
  }
  items.add(prefix + warps_before);
  items.store(out + base, valid, vectorized);
}

// Workspace: the tile counter in the first word, then one status word per tile.
std::int64_t tile_count(std::int64_t n) { return ceil_div<std::int64_t>(n, kThreads * kItems); }

}  // namespace

std::size_t decoupled_lookback_workspace_bytes(std::int64_t n) {
  return n > 0 ? static_cast<std::size_t>(tile_count(n) + 1) * sizeof(StatusWord) : 0;
}

template <typename T>
void decoupled_lookback(const ScanArgs<T>& args, cudaStream_t stream) {
  const std::int64_t n = args.n;
  if (n == 0) return;
  const std::int64_t tiles = tile_count(n);
  CUDALAB_REQUIRE(tiles <= INT_MAX, "scan decoupled_lookback: n needs more than 2^31-1 tiles");
  const std::size_t bytes = decoupled_lookback_workspace_bytes(n);
  auto* const words = static_cast<StatusWord*>(workspace_of(args, bytes, "scan decoupled_lookback"));
  // Every status starts invalid and the counter at 0, on every launch: part of the scan's cost.
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(words, 0, bytes, stream));
  auto* const tile_counter = reinterpret_cast<unsigned*>(words);
  StatusWord* const states = words + 1;
  const bool aligned = is_aligned16(args.in) && is_aligned16(args.out);
  const unsigned grid = static_cast<unsigned>(tiles);
  if (args.kind == ScanKind::inclusive) {
    scan_decoupled_lookback_kernel<ScanKind::inclusive>
        <<<grid, kThreads, 0, stream>>>(args.in, args.out, n, states, tile_counter, aligned);
  } else {
    scan_decoupled_lookback_kernel<ScanKind::exclusive>
        <<<grid, kThreads, 0, stream>>>(args.in, args.out, n, states, tile_counter, aligned);
  }
  CUDALAB_CHECK_LAUNCH();
}

template void decoupled_lookback(const ScanArgs<std::int32_t>&, cudaStream_t);
template void decoupled_lookback(const ScanArgs<float>&, cudaStream_t);

}  // namespace cudalab::scan_variants
