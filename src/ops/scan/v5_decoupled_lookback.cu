#include <climits>
#include <cstring>

#include <cuda/atomic>

#include "core/block_scan.cuh"
#include "core/launch.cuh"
#include "ops/scan/tile.cuh"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {
namespace {

// 128 threads x 32 elements (4096 per tile, 16 KiB of int32). On an H100 at 2^28 int32 this was
// 1% faster than 128 x 24 (CUB's Hopper shape) and 6% faster than 256 x 16: more bytes in flight
// per block and fewer tiles to chain.
constexpr int kThreads = 128;
constexpr int kItems = 32;

// Look-back timing, measured on an H100 at 2^28 int32 (with 128 x 24 tiles): polling a word that
// is not yet written every 500 ns rather than every 32 ns, and waiting 1 us before the first
// look, took the scan from 881 to 841 us. Fewer polls of unwritten words compete with the data
// stream for the L2, and after the wait the nearest predecessors mostly know their inclusive
// prefix, so the walk back stops at once.
constexpr unsigned kPollNanoseconds = 500;
constexpr unsigned kFirstLookNanoseconds = 1000;
template <typename T>
using Tile = WarpRowTile<T, kThreads, kItems>;

// A tile's status word: the status in the high 32 bits, the value's bits in the low 32, written
// and read as one 64-bit atomic, so a reader never sees a status with another status's value.
using StatusWord = unsigned long long;
enum Status : unsigned { kInvalid = 0, kAggregate = 1, kPrefix = 2 };

template <typename T>
__device__ StatusWord pack(Status status, T value) {
  static_assert(sizeof(T) == 4, "the value must fit beside the status in 64 bits");
  unsigned bits;
  memcpy(&bits, &value, sizeof bits);
  return (static_cast<StatusWord>(status) << 32) | bits;
}

template <typename T>
__device__ T unpack(StatusWord word) {
  const unsigned bits = static_cast<unsigned>(word);
  T value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

__device__ Status status_of(StatusWord word) { return static_cast<Status>(word >> 32); }

// Relaxed device-scope atomics: the word carries everything a reader needs, so no fence orders
// it against other memory; device scope makes the loads bypass the SM's L1 and see other SMs'
// stores.
using StatusRef = cuda::atomic_ref<StatusWord, cuda::thread_scope_device>;

__device__ void publish(StatusWord* word, StatusWord value) {
  StatusRef(*word).store(value, cuda::memory_order_relaxed);
}

__device__ StatusWord wait_for_status(StatusWord* word) {
  StatusWord value = StatusRef(*word).load(cuda::memory_order_relaxed);
  while (status_of(value) == kInvalid) {
    __nanosleep(kPollNanoseconds);
    value = StatusRef(*word).load(cuda::memory_order_relaxed);
  }
  return value;
}

// Run by one whole warp: the sum of every tile before `tile`. Lane l reads the word of tile
// window - l; the warp adds the aggregates up to the nearest tile that already knows its
// inclusive prefix (and that prefix), or all 32 aggregates and moves 32 tiles further back.
template <typename T>
__device__ T look_back(StatusWord* states, std::int64_t tile) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  T exclusive = T(0);
  for (std::int64_t window = tile - 1;; window -= 32) {
    const std::int64_t predecessor = window - lane;
    // Tile 0 always publishes a prefix, so lanes past it are never added; give them one too.
    const StatusWord word = predecessor >= 0 ? wait_for_status(states + predecessor) : pack(kPrefix, T(0));
    const unsigned prefix_lanes = __ballot_sync(0xffffffffu, status_of(word) == kPrefix);
    const int last = prefix_lanes != 0 ? __ffs(prefix_lanes) - 1 : 31;
    const T contribution = lane <= last ? unpack<T>(word) : T(0);
    exclusive = __shfl_sync(0xffffffffu, warp_inclusive_scan(contribution), last) + exclusive;
    if (prefix_lanes != 0) return exclusive;
  }
}

template <ScanKind Kind, typename T>
__global__ void __launch_bounds__(kThreads)
    scan_decoupled_lookback_kernel(const T* in, T* out, std::int64_t n, StatusWord* states,
                                   unsigned* tile_counter, bool aligned) {
  __shared__ T warp_totals[Tile<T>::kWarps];
  __shared__ unsigned tile_shared;
  __shared__ T prefix_shared;
  // Tiles are numbered by a counter in the order blocks start, not by blockIdx: a tile then only
  // waits on tiles whose blocks are already running, whatever order the hardware starts blocks
  // in. Blocks do start in blockIdx order in practice, so tile blockIdx.x is loaded while the
  // counter's answer is on its way, and loaded again in the rare case the guess was wrong: the
  // atomic's round trip no longer delays every tile's loads (881 against 918 us at 2^28 int32 on
  // an H100; numbering by blockIdx alone, with no guarantee, measured 903 us).
  if (threadIdx.x == 0) tile_shared = atomicAdd(tile_counter, 1u);
  constexpr int kTileItems = Tile<T>::kItems;
  const auto valid_in = [n](std::int64_t t) {
    const std::int64_t left = n - t * kTileItems;
    return static_cast<int>(left < kTileItems ? left : kTileItems);
  };
  Tile<T> items;
  const auto load = [&](std::int64_t t) {
    items.load(in + t * kTileItems, valid_in(t), aligned && valid_in(t) == kTileItems);
  };
  std::int64_t tile = blockIdx.x;
  load(tile);
  __syncthreads();
  if (tile_shared != tile) {
    tile = tile_shared;
    load(tile);
  }
  const std::int64_t base = tile * kTileItems;
  const int valid = valid_in(tile);
  const bool vectorized = aligned && valid == kTileItems;

  const T warp_total = items.template scan_warp_segment<Kind>();
  T aggregate;
  const T warps_before = block_exclusive_scan_of_warp_totals(warp_total, warp_totals, &aggregate);

  T prefix = T(0);
  if (tile == 0) {
    if (threadIdx.x == 0) publish(states, pack(kPrefix, aggregate));
  } else {
    if (threadIdx.x < 32) {
      // Publish the aggregate first so successors can go past this tile before it knows its prefix.
      if (threadIdx.x == 0) publish(states + tile, pack(kAggregate, aggregate));
      __nanosleep(kFirstLookNanoseconds);
      const T exclusive = look_back<T>(states, tile);
      if (threadIdx.x == 0) {
        publish(states + tile, pack(kPrefix, exclusive + aggregate));
        prefix_shared = exclusive;
      }
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
void decoupled_lookback(const T* in, T* out, std::int64_t n, ScanKind kind, Workspace& workspace,
                        cudaStream_t stream) {
  if (n == 0) return;
  const std::int64_t tiles = tile_count(n);
  CUDALAB_REQUIRE(tiles <= INT_MAX, "scan decoupled_lookback: n needs more than 2^31-1 tiles");
  const std::size_t bytes = decoupled_lookback_workspace_bytes(n);
  auto* const words = static_cast<StatusWord*>(workspace.reserve(bytes));
  // Every status starts invalid and the counter at 0, on every launch: part of the scan's cost.
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(words, 0, bytes, stream));
  auto* const tile_counter = reinterpret_cast<unsigned*>(words);
  StatusWord* const states = words + 1;
  const bool aligned = aligned16(in) && aligned16(out);
  const unsigned grid = static_cast<unsigned>(tiles);
  if (kind == ScanKind::inclusive) {
    scan_decoupled_lookback_kernel<ScanKind::inclusive>
        <<<grid, kThreads, 0, stream>>>(in, out, n, states, tile_counter, aligned);
  } else {
    scan_decoupled_lookback_kernel<ScanKind::exclusive>
        <<<grid, kThreads, 0, stream>>>(in, out, n, states, tile_counter, aligned);
  }
  CUDALAB_CHECK_LAUNCH();
}

template void decoupled_lookback(const std::int32_t*, std::int32_t*, std::int64_t, ScanKind, Workspace&,
                                 cudaStream_t);
template void decoupled_lookback(const float*, float*, std::int64_t, ScanKind, Workspace&, cudaStream_t);

}  // namespace cudalab::scan_variants
