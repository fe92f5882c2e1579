#include <climits>

#include "core/block_scan.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "ops/scan/levels.hpp"
#include "ops/scan/tile.cuh"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {
namespace {

// 128 threads x 24 elements (3072 per tile): CUB's Hopper shape for 4-byte sums, not tuned
// further here (decoupled_lookback's was, and settled on 128 x 32).
constexpr int kThreads = 128;
constexpr int kItems = 24;
template <typename T>
using Tile = WarpRowTile<T, kThreads, kItems>;

template <typename T>
__device__ int valid_items(std::int64_t n) {
  const std::int64_t left = n - static_cast<std::int64_t>(blockIdx.x) * Tile<T>::kItems;
  return static_cast<int>(left < Tile<T>::kItems ? left : Tile<T>::kItems);
}

// Pass 1: the sum of each tile, and nothing written but that sum.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    scan_reduce_then_scan_sums_kernel(const T* in, std::int64_t n, T* tile_sums, bool aligned) {
  __shared__ T warp_totals[Tile<T>::kWarps];
  const int valid = valid_items<T>(n);
  Tile<T> tile;
  tile.load(in + static_cast<std::int64_t>(blockIdx.x) * Tile<T>::kItems, valid, aligned && valid == Tile<T>::kItems);
  const T warp_total = __shfl_sync(kFullWarpMask, warp_inclusive_scan(tile.thread_sum()), kWarpSize - 1);
  T total;
  block_exclusive_scan_of_warp_totals(warp_total, warp_totals, &total);
  if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// Pass 2: each tile scanned and offset by its prefix (tile_prefix[blockIdx.x], the exclusive
// scan of the tile sums; none when the whole input is one tile). A thread reads its elements
// before it writes them and tiles are disjoint, so out may equal in.
template <ScanKind Kind, typename T>
__global__ void __launch_bounds__(kThreads)
    scan_reduce_then_scan_tiles_kernel(const T* in, T* out, std::int64_t n, const T* tile_prefix, bool aligned) {
  __shared__ T warp_totals[Tile<T>::kWarps];
  const int valid = valid_items<T>(n);
  const bool vectorized = aligned && valid == Tile<T>::kItems;
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * Tile<T>::kItems;
  Tile<T> tile;
  tile.load(in + base, valid, vectorized);
  const T warp_total = tile.template scan_warp_segment<Kind>();
  T total;
  const T warps_before = block_exclusive_scan_of_warp_totals(warp_total, warp_totals, &total);
  const T prefix = tile_prefix != nullptr ? tile_prefix[blockIdx.x] : T(0);
  tile.add(prefix + warps_before);
  tile.store(out + base, valid, vectorized);
}

template <typename T>
void scan_level(const T* in, T* out, std::int64_t n, ScanKind kind, unsigned char* scratch, cudaStream_t stream) {
  const std::int64_t tiles = ceil_div<std::int64_t>(n, Tile<T>::kItems);
  CUDALAB_REQUIRE(tiles <= INT_MAX, "scan reduce_then_scan: n needs more than 2^31-1 tiles");
  const unsigned grid = static_cast<unsigned>(tiles);
  const bool aligned = is_aligned16(in) && is_aligned16(out);
  T* tile_prefix = nullptr;
  if (tiles > 1) {
    tile_prefix = reinterpret_cast<T*>(scratch);
    scan_reduce_then_scan_sums_kernel<<<grid, kThreads, 0, stream>>>(in, n, tile_prefix, aligned);
    CUDALAB_CHECK_LAUNCH();
    scan_level(tile_prefix, tile_prefix, tiles, ScanKind::exclusive,
               scratch + workspace_align(static_cast<std::size_t>(tiles) * sizeof(T)), stream);
  }
  if (kind == ScanKind::inclusive) {
    scan_reduce_then_scan_tiles_kernel<ScanKind::inclusive>
        <<<grid, kThreads, 0, stream>>>(in, out, n, tile_prefix, aligned);
  } else {
    scan_reduce_then_scan_tiles_kernel<ScanKind::exclusive>
        <<<grid, kThreads, 0, stream>>>(in, out, n, tile_prefix, aligned);
  }
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
std::size_t reduce_then_scan_workspace_bytes(const ScanArgs<T>& args) {
  return level_sums_bytes(args.n, Tile<T>::kItems, sizeof(T));
}

template <typename T>
void reduce_then_scan(const ScanArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  void* const scratch = workspace_of(args, reduce_then_scan_workspace_bytes(args), "scan reduce_then_scan");
  scan_level(args.in, args.out, args.n, args.kind, static_cast<unsigned char*>(scratch), stream);
}

template void reduce_then_scan(const ScanArgs<std::int32_t>&, cudaStream_t);
template void reduce_then_scan(const ScanArgs<float>&, cudaStream_t);
template std::size_t reduce_then_scan_workspace_bytes(const ScanArgs<std::int32_t>&);
template std::size_t reduce_then_scan_workspace_bytes(const ScanArgs<float>&);

}  // namespace cudalab::scan_variants
