// The tile-status protocol of single-pass prefix computations (Merrill and Garland, "Single-pass
// Parallel Prefix Scan with Decoupled Look-back"): each tile publishes its aggregate as soon as
// it has it and its inclusive prefix once known, and finds its own exclusive prefix by one warp
// reading its predecessors' words. Written once for the scan (prefix sums of the elements) and
// stream compaction (prefix sums of the tiles' selected counts).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda/atomic>

#include "core/block_scan.cuh"
#include "core/warp.cuh"

namespace cudalab::lookback {

// Look-back timing, measured on an H100 at 2^28 int32 scans (with 128 x 24 tiles): polling a word
// that is not yet written every 500 ns rather than every 32 ns, and waiting 1 us before the first
// look, took the scan from 881 to 841 us. Fewer polls of unwritten words compete with the data
// stream for the L2, and after the wait the nearest predecessors mostly know their inclusive
// prefix, so the walk back stops at once.
constexpr unsigned kPollNanoseconds = 500;
constexpr unsigned kFirstLookNanoseconds = 1000;

// A tile's status word: status and value written and read as one 64-bit atomic, so a reader never
// sees a status with another status's value. A 4-byte value (int32 or fp32 sums) takes the low 32
// bits and the status the high 32; a 64-bit count takes the low 62 bits and the status the top 2
// (counts of elements stay far below 2^62).
using StatusWord = unsigned long long;
enum Status : unsigned { kInvalid = 0, kAggregate = 1, kPrefix = 2 };

template <typename T>
__device__ StatusWord pack(Status status, T value) {
  if constexpr (sizeof(T) == 4) {
    unsigned bits;
    memcpy(&bits, &value, sizeof bits);
    return (static_cast<StatusWord>(status) << 32) | bits;
  } else {
    static_assert(std::is_same_v<T, std::int64_t>, "a 4-byte value or a 64-bit count");
    return (static_cast<StatusWord>(status) << 62) | static_cast<StatusWord>(value);
  }
}

template <typename T>
__device__ T unpack(StatusWord word) {
  if constexpr (sizeof(T) == 4) {
    const unsigned bits = static_cast<unsigned>(word);
    T value;
    memcpy(&value, &bits, sizeof value);
    return value;
  } else {
    return static_cast<T>(word & ((StatusWord{1} << 62) - 1));
  }
}

template <typename T>
__device__ Status status_of(StatusWord word) {
  return static_cast<Status>(word >> (sizeof(T) == 4 ? 32 : 62));
}

// Relaxed device-scope atomics: the word carries everything a reader needs, so no fence orders
// it against other memory; device scope makes the loads bypass the SM's L1 and see other SMs'
// stores.
using StatusRef = cuda::atomic_ref<StatusWord, cuda::thread_scope_device>;

__device__ inline void publish(StatusWord* word, StatusWord value) {
  StatusRef(*word).store(value, cuda::memory_order_relaxed);
}

template <typename T>
__device__ StatusWord wait_for_status(StatusWord* word) {
  StatusWord value = StatusRef(*word).load(cuda::memory_order_relaxed);
  while (status_of<T>(value) == kInvalid) {
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
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  T exclusive = T(0);
  for (std::int64_t window = tile - 1;; window -= kWarpSize) {
    const std::int64_t predecessor = window - lane;
    // Tile 0 always publishes a prefix, so lanes past it are never added; give them one too.
    const StatusWord word = predecessor >= 0 ? wait_for_status<T>(states + predecessor) : pack(kPrefix, T(0));
    const unsigned prefix_lanes = __ballot_sync(kFullWarpMask, status_of<T>(word) == kPrefix);
    const int last = prefix_lanes != 0 ? __ffs(prefix_lanes) - 1 : kWarpSize - 1;
    const T contribution = lane <= last ? unpack<T>(word) : T(0);
    exclusive = __shfl_sync(kFullWarpMask, warp_inclusive_scan(contribution), last) + exclusive;
    if (prefix_lanes != 0) return exclusive;
  }
}

// Tiles are numbered by a counter in the order blocks start, not by blockIdx: a tile then only
// waits on tiles whose blocks are already running, whatever order the hardware starts blocks in.
// Blocks do start in blockIdx order in practice, so `load(blockIdx.x)` runs while the counter's
// answer is on its way, and `load(ticket)` again in the rare case the guess was wrong: the
// atomic's round trip no longer delays every tile's loads (881 against 918 us for a 2^28 int32
// scan on an H100; numbering by blockIdx alone, with no guarantee, measured 903 us). Every thread
// of the block calls it; `ticket` is a shared word; one barrier. Returns the tile to work on.
template <typename Load>
__device__ std::int64_t take_tile_in_start_order(unsigned* tile_counter, unsigned* ticket, Load load) {
  if (threadIdx.x == 0) *ticket = atomicAdd(tile_counter, 1u);
  std::int64_t tile = blockIdx.x;
  load(tile);
  __syncthreads();
  if (*ticket != tile) {
    tile = *ticket;
    load(tile);
  }
  return tile;
}

// Run by the first warp of a tile's block (tile > 0) with the tile's aggregate in every lane:
// publishes the aggregate, waits, looks back, publishes the inclusive prefix, and returns the
// exclusive prefix (in every lane). The aggregate goes out first so successors can go past this
// tile before it knows its prefix.
template <typename T>
__device__ T exclusive_prefix_of_tile(StatusWord* states, std::int64_t tile, T aggregate) {
  if (threadIdx.x == 0) publish(states + tile, pack(kAggregate, aggregate));
  __nanosleep(kFirstLookNanoseconds);
  const T exclusive = look_back<T>(states, tile);
  if (threadIdx.x == 0) publish(states + tile, pack(kPrefix, exclusive + aggregate));
  return exclusive;
}

}  // namespace cudalab::lookback
