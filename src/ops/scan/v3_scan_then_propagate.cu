#include <climits>

#include "core/launch.cuh"
#include "ops/scan/block_scans.cuh"
#include "ops/scan/levels.hpp"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {
namespace {

enum class BlockScan { hillis_steele, blelloch_padded };

// Both block scans run 1024 threads: Hillis-Steele scans one element per thread, Blelloch two.
constexpr int kThreads = 1024;
template <BlockScan Algorithm>
constexpr int kTileItems = Algorithm == BlockScan::hillis_steele ? kThreads : 2 * kThreads;

// Scans tile blockIdx.x on its own and writes its total to tile_sums (when there is more than
// one tile). Each thread reads its elements before the first barrier and writes them after the
// last, and tiles are disjoint, so out may equal in.
template <BlockScan Algorithm, ScanKind Kind, typename T>
__global__ void __launch_bounds__(kThreads)
    scan_then_propagate_tiles_kernel(const T* in, T* out, std::int64_t n, T* tile_sums) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* const shared = reinterpret_cast<T*>(shared_bytes);
  constexpr int kTile = kTileItems<Algorithm>;
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const int valid = static_cast<int>(n - base < kTile ? n - base : kTile);
  const int t = static_cast<int>(threadIdx.x);
  T total;
  if constexpr (Algorithm == BlockScan::hillis_steele) {
    const T x = t < valid ? in[base + t] : T(0);
    const T y = hillis_steele_block_scan<Kind>(x, shared, &total);
    if (t < valid) out[base + t] = y;
  } else {
    T a = t < valid ? in[base + t] : T(0);
    T b = t + kThreads < valid ? in[base + t + kThreads] : T(0);
    blelloch_block_scan<Kind, true>(a, b, shared, &total);
    if (t < valid) out[base + t] = a;
    if (t + kThreads < valid) out[base + t + kThreads] = b;
  }
  if (tile_sums != nullptr && t == 0) tile_sums[blockIdx.x] = total;
}

// Adds tile b's offset (the exclusive scan of the tile sums) to its elements; block b handles
// tile b + 1, since tile 0's offset is 0.
template <typename T>
__global__ void __launch_bounds__(256)
    scan_then_propagate_add_kernel(T* out, std::int64_t n, const T* tile_offsets, int tile_items) {
  const std::int64_t tile = static_cast<std::int64_t>(blockIdx.x) + 1;
  const T offset = tile_offsets[tile];
  const std::int64_t begin = tile * tile_items;
  const std::int64_t end = begin + tile_items < n ? begin + tile_items : n;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) out[i] = offset + out[i];
}

// One level: scan the tiles, scan their sums in place one level up (exclusive), add them back.
template <BlockScan Algorithm, typename T>
void scan_level(const T* in, T* out, std::int64_t n, ScanKind kind, unsigned char* scratch, cudaStream_t stream) {
  constexpr int kTile = kTileItems<Algorithm>;
  const std::int64_t tiles = ceil_div<std::int64_t>(n, kTile);
  CUDALAB_REQUIRE(tiles <= INT_MAX, "scan scan_then_propagate: n needs more than 2^31-1 tiles");
  T* const tile_sums = tiles > 1 ? reinterpret_cast<T*>(scratch) : nullptr;
  const std::size_t shared = Algorithm == BlockScan::hillis_steele ? hillis_steele_shared_bytes<T>(kThreads)
                                                                   : blelloch_shared_bytes<T>(kThreads, true);
  const unsigned grid = static_cast<unsigned>(tiles);
  if (kind == ScanKind::inclusive) {
    scan_then_propagate_tiles_kernel<Algorithm, ScanKind::inclusive>
        <<<grid, kThreads, shared, stream>>>(in, out, n, tile_sums);
  } else {
    scan_then_propagate_tiles_kernel<Algorithm, ScanKind::exclusive>
        <<<grid, kThreads, shared, stream>>>(in, out, n, tile_sums);
  }
  CUDALAB_CHECK_LAUNCH();
  if (tiles == 1) return;
  scan_level<Algorithm>(tile_sums, tile_sums, tiles, ScanKind::exclusive,
                        scratch + workspace_align(static_cast<std::size_t>(tiles) * sizeof(T)), stream);
  scan_then_propagate_add_kernel<<<grid - 1, 256, 0, stream>>>(out, n, tile_sums, kTile);
  CUDALAB_CHECK_LAUNCH();
}

template <BlockScan Algorithm, typename T>
std::size_t workspace_bytes(const ScanArgs<T>& args) {
  return level_sums_bytes(args.n, kTileItems<Algorithm>, sizeof(T));
}

template <BlockScan Algorithm, typename T>
void launch(const ScanArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  const char* const name =
      Algorithm == BlockScan::hillis_steele ? "scan scan_then_propagate_hillis_steele" : "scan scan_then_propagate";
  void* const scratch = workspace_of(args, workspace_bytes<Algorithm>(args), name);
  scan_level<Algorithm>(args.in, args.out, args.n, args.kind, static_cast<unsigned char*>(scratch), stream);
}

}  // namespace

template <typename T>
void scan_then_propagate(const ScanArgs<T>& args, cudaStream_t stream) {
  launch<BlockScan::blelloch_padded>(args, stream);
}

template <typename T>
void scan_then_propagate_hillis_steele(const ScanArgs<T>& args, cudaStream_t stream) {
  launch<BlockScan::hillis_steele>(args, stream);
}

template <typename T>
std::size_t scan_then_propagate_workspace_bytes(const ScanArgs<T>& args) {
  return workspace_bytes<BlockScan::blelloch_padded>(args);
}

template <typename T>
std::size_t scan_then_propagate_hillis_steele_workspace_bytes(const ScanArgs<T>& args) {
  return workspace_bytes<BlockScan::hillis_steele>(args);
}

template void scan_then_propagate(const ScanArgs<std::int32_t>&, cudaStream_t);
template void scan_then_propagate(const ScanArgs<float>&, cudaStream_t);
template void scan_then_propagate_hillis_steele(const ScanArgs<std::int32_t>&, cudaStream_t);
template void scan_then_propagate_hillis_steele(const ScanArgs<float>&, cudaStream_t);
template std::size_t scan_then_propagate_workspace_bytes(const ScanArgs<std::int32_t>&);
template std::size_t scan_then_propagate_workspace_bytes(const ScanArgs<float>&);
template std::size_t scan_then_propagate_hillis_steele_workspace_bytes(const ScanArgs<std::int32_t>&);
template std::size_t scan_then_propagate_hillis_steele_workspace_bytes(const ScanArgs<float>&);

}  // namespace cudalab::scan_variants
