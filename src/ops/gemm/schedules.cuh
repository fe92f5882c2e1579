// The tile schedules of the GEMM Hopper rungs: which output tiles, and which k-tiles of each, a
// CTA computes, in what order, and what becomes of a tile's fp32 sums after its k-loop. A kernel
// is written once over its Schedule (a kernel parameter the host fills):
//
//   const int unit = schedule.claim();                         // every thread, before the roles split
//   schedule.for_each(unit, [&](const GemmWork& work) { ... }); // producer and consumers alike
//   if (!schedule.finish(acc, work, consumer, p, row0, col0, ring)) return;  // a consumer, after its k-loop
//
// The producer and the consumers walk the same sequence of work, so their rings stay in step.
//   TileSchedule        one tile per CTA, the grid's coordinates (rung wgmma_specialized);
//   PersistentSchedule  one CTA per SM over the L2-grouped tile order, optionally split-K: each
//                       part's sums go to scratch for a second kernel (wgmma_persistent, wgmma_small,
//                       wgmma_small_splitk);
//   ClusterSchedule     the same over clusters of CTAs on vertically stacked tiles (wgmma_cluster);
//   StreamKSchedule     every CTA an equal share of all the tiles' k-steps, split tiles finished
//                       in the kernel by their owners (wgmma_streamk; the plan: stream_k.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/flags.cuh"
#include "core/mma_sync.cuh"
#include "ops/gemm/hopper.cuh"
#include "ops/gemm/stream_k.hpp"

namespace cudalab::gemm_variants {

// One work item: a tile and the k-tiles of it this CTA computes.
struct GemmWork {
  hopper::TileCoord at;  // tile row, column (in CTA tiles) and matrix of the batch
  int tile = 0;          // its index in the schedule's order
  int unit = 0;          // the CTA's unit of the schedule that produced it
  int kt0 = 0, k_tiles = 0;
  int split = 0;      // split-K: the part of k
  bool first = true;  // the CTA's first item
  bool more = false;  // more items follow in this CTA
  StreamKRole role = StreamKRole::whole;
  int first_peer = 0;  // stream-K owner: the lowest unit holding the tile's earlier k-steps
};

#if CUDALAB_SM90A

// A warpgroup's 64 x N fp32 sums (the accumulators' layout of store_accumulators_direct) into a
// dense m x n matrix at `partial`, clipped to its bounds.
template <int kRegisters>
__device__ __forceinline__ void store_partial_sums(float* partial, std::int64_t m, std::int64_t n,
                                                   const float (&acc)[kRegisters], std::int64_t row0,
                                                   std::int64_t col0) {
  const int t = static_cast<int>(threadIdx.x) % 128, lane = t % 32;
  const std::int64_t row = row0 + 16 * (t / 32) + lane / 4, col = col0 + 2 * (lane % 4);
#pragma unroll
  for (int i = 0; i < kRegisters / 4; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const std::int64_t r = row + 8 * half, c = col + 8 * i;  // c is even
      if (r >= m) continue;
      float* at = partial + r * n + c;
      if (n % 2 == 0 && c + 1 < n) {  // r n + c even: an 8-byte aligned pair
        *reinterpret_cast<float2*>(at) = make_float2(acc[4 * i + 2 * half], acc[4 * i + 2 * half + 1]);
        continue;
      }
      if (c < n) at[0] = acc[4 * i + 2 * half];
      if (c + 1 < n) at[1] = acc[4 * i + 2 * half + 1];
    }
}

// C = alpha * (the splits' partial sums added in order) + beta * C. A thread takes four adjacent
// columns of a row (one 16-byte load a part where rows are whole float4s) and blocks walk the rows,
// so no element's index is divided (three 64-bit divisions an element took 8.7 us for 1024 x 1024
// outputs on an H200).
template <typename T>
__global__ void add_partial_sums_kernel(const float* partial, int splits, OutputMatrix<T> out, std::int64_t stride_c,
                                        std::int64_t batch) {
  const std::int64_t rows = batch * out.m, total = rows * out.n, step = 4 * std::int64_t{gridDim.x} * blockDim.x;
  const bool vectors = out.n % 4 == 0;
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const std::int64_t z = r / out.m, row = r - z * out.m;
    const OutputMatrix<T> at = at_offset(out, z * stride_c);
    for (std::int64_t col = 4 * (std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x); col < out.n; col += step) {
      const float* part = partial + r * out.n + col;
      const int count = out.n - col < 4 ? static_cast<int>(out.n - col) : 4;
      float sum[4];
      if (vectors) {
        float4 v = *reinterpret_cast<const float4*>(part);
        for (int s = 1; s < splits; ++s) {
          const float4 w = *reinterpret_cast<const float4*>(part + s * total);
          v = make_float4(v.x + w.x, v.y + w.y, v.z + w.z, v.w + w.w);
        }
        sum[0] = v.x, sum[1] = v.y, sum[2] = v.z, sum[3] = v.w;
      } else {
        for (int j = 0; j < count; ++j) {
          sum[j] = part[j];
          for (int s = 1; s < splits; ++s) sum[j] += part[s * total + j];
        }
      }
      for (int j = 0; j < count; ++j)
        blend_store(at.c + row * at.ldc + col + j, at.old + row * at.ldold + col + j, at.alpha, at.beta, sum[j]);
    }
  }
}

// The split-K schedule's second kernel: the parts a PersistentSchedule<..., true> kernel left in
// `partial` summed into out (alpha, beta and C as out says).
template <typename T>
void add_partial_sums(const float* partial, int splits, const OutputMatrix<T>& out, std::int64_t stride_c,
                      std::int64_t batch, cudaStream_t stream) {
  constexpr int kThreads = 256;
  constexpr std::int64_t kMostBlocks = 65535;  // gridDim.y's limit; the kernel's loops cover the rest
  if (batch * out.m * out.n == 0) return;
  const dim3 grid(static_cast<unsigned>(std::min(ceil_div<std::int64_t>(out.n, 4 * kThreads), kMostBlocks)),
                  static_cast<unsigned>(std::min(batch * out.m, kMostBlocks)));
  add_partial_sums_kernel<T><<<grid, kThreads, 0, stream>>>(partial, splits, out, stride_c, batch);
  CUDALAB_CHECK_LAUNCH();
}

#endif  // CUDALAB_SM90A

// The finish of a schedule whose every work item is a whole tile: the epilogue stores it.
struct WholeTileFinish {
#if CUDALAB_SM90A
  template <typename T, int kRegisters>
  __device__ __forceinline__ bool finish(float (&)[kRegisters], const GemmWork&, int, const hopper::WgmmaParams<T>&,
                                         int, int, std::uint32_t) const {
    return true;
  }
#endif
};

// One tile per CTA: blockIdx (x, y, z) is the tile's (column, row, matrix), over all of k.
struct TileSchedule : WholeTileFinish {
  int k_tiles = 0;

#if CUDALAB_SM90A
  __device__ __forceinline__ int claim() const { return 0; }

  template <typename Visit>
  __device__ __forceinline__ void for_each(int, Visit&& visit) const {
    GemmWork work;
    work.at = {static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.z)};
    work.k_tiles = k_tiles;
    visit(work);
  }
#endif
};

// Split k across CTAs: work item u is tile u % tiles over k-tiles [(u / tiles) * k_tiles_per_split,
// ...); with more than one split, each part's fp32 sums go to partial + (u / tiles) * batch * m * n.
// One split: items are tiles, over all of k.
struct SplitK {
  int splits = 1, k_tiles_per_split = 0;
  float* partial = nullptr;
};

// Where `tiles` leave SMs idle, k split for about one work item per SM, parts of at least 4 k-tiles
// but the last; elsewhere one split (partial stays null: the caller reserves splits * outputs
// floats when there are more).
inline SplitK split_k_for(std::int64_t tiles, int k_tiles, int sm_count) {
  SplitK split{1, k_tiles, nullptr};
  if (tiles <= 0 || tiles >= sm_count) return split;
  const int most = k_tiles / 4 > 1 ? k_tiles / 4 : 1;
  const std::int64_t fill = sm_count / tiles;
  const int wanted = static_cast<int>(fill < most ? fill : most);
  if (wanted <= 1) return split;
  split.k_tiles_per_split = (k_tiles + wanted - 1) / wanted;
  split.splits = (k_tiles + split.k_tiles_per_split - 1) / split.k_tiles_per_split;
  if (split.splits <= 1) split = SplitK{1, k_tiles, nullptr};
  return split;
}

// The static persistent schedule: CTA b of a grid of g takes work items b, b + g, ... in the order
// of grouped_tile (bands of kGroupM tile rows, column by column), so the tiles that run at one
// time share their A and B panels in L2. kSplitK: the items are parts of k (SplitK above).
template <int kGroupM, bool kSplitK>
struct PersistentSchedule {
  int tiles_m = 0, tiles_n = 0, tiles = 0, k_tiles = 0;
  SplitK split;

#if CUDALAB_SM90A
  __device__ __forceinline__ int claim() const { return static_cast<int>(blockIdx.x); }

  template <typename Visit>
  __device__ __forceinline__ void for_each(int first, Visit&& visit) const {
    const int step = static_cast<int>(gridDim.x), units = tiles * split.splits;
    for (int unit = first; unit < units; unit += step) {
      GemmWork work;
      const int part = unit / tiles, kt0 = part * split.k_tiles_per_split, rest = k_tiles - kt0;
      work.tile = unit - part * tiles;
      work.unit = unit;
      work.split = part;
      work.kt0 = kt0;
      work.k_tiles = rest < split.k_tiles_per_split ? rest : split.k_tiles_per_split;
      work.at = hopper::grouped_tile(work.tile, tiles_m, tiles_n, kGroupM);
      work.first = unit == first;
      work.more = unit + step < units;
      visit(work);
    }
  }

  // Split-K: a consumer's sums to its part's scratch matrix, and no epilogue.
  template <typename T, int kRegisters>
  __device__ __forceinline__ bool finish(float (&acc)[kRegisters], const GemmWork& work, int,
                                         const hopper::WgmmaParams<T>& p, int row0, int col0, std::uint32_t) const {
    if constexpr (kSplitK) {
      const std::int64_t matrix = p.out.m * p.out.n;
      store_partial_sums(split.partial + (static_cast<std::int64_t>(work.split) * p.batch + work.at.batch) * matrix,
                         p.out.m, p.out.n, acc, row0, col0);
      return false;
    }
    return true;
  }
#endif
};

// Clusters of kClusterSize CTAs on vertically stacked tiles (one tile of rows per CTA, the B tile
// shared by multicast): cluster c of a grid of g clusters takes cluster tiles c, c + g, ... in the
// order of grouped_tile over bands of kGroupM cluster rows; a CTA's tile row is its cluster row
// times kClusterSize plus its rank.
template <int kClusterSize, int kGroupM>
struct ClusterSchedule : WholeTileFinish {
  int cluster_rows = 0, tiles_n = 0, cluster_tiles = 0, k_tiles = 0;

#if CUDALAB_SM90A
  __device__ __forceinline__ int claim() const { return static_cast<int>(blockIdx.x) / kClusterSize; }

  template <typename Visit>
  __device__ __forceinline__ void for_each(int first, Visit&& visit) const {
    const int step = static_cast<int>(gridDim.x) / kClusterSize;
    const int rank = static_cast<int>(hopper::cluster_cta_rank());
    for (int tile = first; tile < cluster_tiles; tile += step) {
      GemmWork work;
      work.tile = tile;
      work.unit = tile;
      work.at = hopper::grouped_tile(tile, cluster_rows, tiles_n, kGroupM);
      work.at.m = work.at.m * kClusterSize + rank;
      work.k_tiles = k_tiles;
      visit(work);
    }
  }
#endif
};

// Stream-K over the large tiles (two consumer warpgroups of 64 x kBlockN each): the plan, the
// partial tiles (unit u's, consumer c's at slots + (2u + c) * 64 * kBlockN floats, each thread's
// accumulators as float4 i at i * 128 + thread), the flags (tile t, consumer c at flags[2t + c]:
// the peers that have published) and the ticket that numbers the CTAs in the order they start.
// Flags and ticket are zeroed before each launch. A tile's owner adds its peers' partial tiles
// in increasing unit order, so the output has the same bits on every run.
template <int kGroupM, int kBlockN>
struct StreamKSchedule {
  StreamKPlan plan;
  int tiles_m = 0, tiles_n = 0;
  float* slots = nullptr;
  unsigned* flags = nullptr;
  unsigned* ticket = nullptr;
  // With GemmArgs::a_row_sums: a unit's and warpgroup's sums of A's rows (8 a thread, float e of
  // thread t at e * 128 + t), published beside its partial tile and added by the owner likewise.
  float* row_sum_slots = nullptr;

#if CUDALAB_SM90A
  static constexpr int kSlotFloats = 64 * kBlockN;

  // The CTA's unit, from the ticket: a unit waits only on lower ones, and those have started.
  __device__ __forceinline__ int claim() const {
    __shared__ int unit;
    if (threadIdx.x == 0) unit = static_cast<int>(atomicAdd(ticket, 1u));
    __syncthreads();
    return unit;
  }

  template <typename Visit>
  __device__ __forceinline__ void for_each(int unit, Visit&& visit) const {
    plan.for_each_piece(unit, [&](const StreamKPiece& piece) {
      GemmWork work;
      work.tile = piece.tile;
      work.at = hopper::grouped_tile(piece.tile, tiles_m, tiles_n, kGroupM);
      work.kt0 = piece.first_k;
      work.k_tiles = piece.k_count;
      work.unit = unit;
      work.role = piece.role;
      work.first_peer = piece.first_peer;
      visit(work);
    });
  }

  // A piece published: its partial tile to the unit's slot, and no epilogue. A piece owned: the
  // peers' partial tiles added first, through `ring` (the shared address of the pipeline's ring,
  // free then: a unit's owned piece is its last, so nothing more is loaded into it).
  template <typename T, int kRegisters>
  __device__ __forceinline__ bool finish(float (&acc)[kRegisters], const GemmWork& work, int consumer,
                                         const hopper::WgmmaParams<T>&, int, int, std::uint32_t ring) const {
    static_assert(2 * kRegisters == kSlotFloats / 64, "a thread's accumulators fill its share of a slot");
    if (work.role == StreamKRole::publish) {
      publish(acc, slot(work.unit, consumer), work.tile, consumer);
      return false;
    }
    if (work.role == StreamKRole::owner) add_peers(acc, work, consumer, ring);
    return true;
  }

  // A publishing piece's sums of A's rows, stored before finish raises the tile's flag (its
  // warpgroup barrier and release fence order them before it).
  __device__ __forceinline__ void publish_row_sums(const float (&sums)[8], int unit, int consumer) const {
    float* to = row_sum_slot(unit, consumer) + threadIdx.x % 128;
#pragma unroll
    for (int e = 0; e < 8; ++e) to[e * 128] = sums[e];
  }

  // An owner's peers' sums of A's rows, added in increasing unit order after finish (whose wait
  // on the flags made them visible), as the partial tiles.
  __device__ __forceinline__ void add_peer_row_sums(float (&sums)[8], const GemmWork& work, int consumer) const {
    for (int u = work.first_peer; u < work.unit; ++u) {
      if (plan.boundary(u) == plan.boundary(u + 1)) continue;
      const float* from = row_sum_slot(u, consumer) + threadIdx.x % 128;
#pragma unroll
      for (int e = 0; e < 8; ++e) sums[e] += from[e * 128];
    }
  }

 private:
  __device__ __forceinline__ float* row_sum_slot(int unit, int consumer) const {
    return row_sum_slots + (2 * static_cast<std::int64_t>(unit) + consumer) * 8 * 128;
  }

  // Unit u's slot for consumer warpgroup c, as float4s.
  __device__ __forceinline__ float4* slot(int unit, int consumer) const {
    return reinterpret_cast<float4*>(slots + (2 * static_cast<std::int64_t>(unit) + consumer) * kSlotFloats);
  }

  // The partial tile stored, then the flag raised once every thread's stores are ordered before it
  // (a warpgroup barrier, then one thread's release fence and relaxed add).
  template <int kRegisters>
  __device__ __forceinline__ void publish(const float (&acc)[kRegisters], float4* to, int tile, int consumer) const {
    const int t = static_cast<int>(threadIdx.x) % 128;
#pragma unroll
    for (int i = 0; i < kRegisters / 4; ++i)
      to[i * 128 + t] = make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]);
    hopper::named_barrier_sync(hopper::kStreamKBarrier + consumer, 128);
    if (t == 0) raise_flag(flags + 2 * tile + consumer);
  }

  // The owner waits for its peers' flags (one thread acquires, a barrier hands the ordering to the
  // warpgroup), then adds their partial tiles in increasing unit order. Each thread copies its own
  // float4s of a peer's tile into the free ring by cp.async (64 KB a warpgroup), all in flight at
  // once, then reads them back: loads into registers came a few at a time beside the 128
  // accumulators, a round trip to L2 each (about 3.5 us a peer at 768 x 3072 x 8192). Both
  // warpgroups own the piece together, so one barrier makes sure neither still reads the ring.
  template <int kRegisters>
  __device__ __forceinline__ void add_peers(float (&acc)[kRegisters], const GemmWork& work, int consumer,
                                            std::uint32_t ring) const {
    const int t = static_cast<int>(threadIdx.x) % 128;
    const int owner = work.unit;
    if (t == 0) {
      unsigned peers = 0;
      for (int u = work.first_peer; u < owner; ++u) peers += plan.boundary(u) < plan.boundary(u + 1) ? 1u : 0u;
      const unsigned* flag = flags + 2 * work.tile + consumer;
      while (read_flag(flag) < peers) __nanosleep(64);
    }
    hopper::named_barrier_sync(hopper::kStreamKBarrier + consumer, 128);
    hopper::named_barrier_sync(hopper::kStreamKRingBarrier, 256);
    const std::uint32_t mine = ring + static_cast<std::uint32_t>(consumer * kSlotFloats + 4 * t) * 4;
    for (int u = work.first_peer; u < owner; ++u) {
      if (plan.boundary(u) == plan.boundary(u + 1)) continue;
      const float4* from = slot(u, consumer);
#pragma unroll
      for (int i = 0; i < kRegisters / 4; ++i) cp_async16(mine + 16 * 128 * i, from + i * 128 + t, 16);
      cp_async_commit();
      cp_async_wait<0>();
#pragma unroll
      for (int i = 0; i < kRegisters / 4; ++i) {
        float4 v;
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                     : "r"(mine + 16 * 128 * i));
        acc[4 * i] += v.x;
        acc[4 * i + 1] += v.y;
        acc[4 * i + 2] += v.z;
        acc[4 * i + 3] += v.w;
      }
    }
  }
#endif
};

}  // namespace cudalab::gemm_variants
