// The Hopper (sm_90a) attention kernel behind rungs `wgmma` and `wgmma_pingpong`, after
// FlashAttention-3's forward (Dao-AILab/flash-attention hopper/, paper arXiv 2407.08608 section 3):
// a block of three warpgroups takes 128 query rows of one (batch, head) and walks the key tiles of
// 128 its rows see from the last to the first (the tile with the sequence's end or the causal
// diagonal comes first; a sliding window's left edge may mask the last few too).
//   Warpgroup 0, the producer, gives its registers back (setmaxnreg.dec 24); one thread loads Q once
//     and then K and V tiles by TMA into two rings of 2 slots each, in the order the consumers use
//     them (K_j, then V of the tile before), each slot with a full barrier (TMA's bytes landed) and
//     an empty barrier (both consumers done with it).
//   Warpgroups 1 and 2, the consumers (setmaxnreg.inc 240), own 64 query rows each. Per key tile j:
//     S_j = Q K_j^T by wgmma from shared memory (SS), issued together with O += P_{j-1} V_{j-1}
//     (RS: P from registers in the accumulator's layout, V MN-major from shared memory); the softmax
//     of S_j (row max over a quad, ex2 with the scale folded in, row sum) runs while P V is still
//     on the tensor cores; only after P V completes is O rescaled and P_j = S_j rounded to T.
//     Registers per consumer thread: S 64 + P 32 + O head_dim / 2 floats.
// kPingPong (rung wgmma_pingpong) adds FA-3's inter-warpgroup schedule: named barriers make the two
// consumers issue their GEMMs in turn, so one warpgroup's softmax runs while the other's GEMMs hold
// the tensor cores; and for batches without a window (dense, or variable-length self-attention;
// not long causal ones) a persistent form of the same consumers (one block an SM walking row
// blocks, the next Q and K loaded while the last P V runs, the turns running on across row blocks).
// Shared memory (1024-byte aligned tiles, 128-byte swizzle): Q 128 x head_dim, K and V 2 slots of
// 128 x head_dim each, and O's staging tile of 128 x head_dim: 192 KiB at head_dim 128, 96 KiB at
// 64. Head_dim 256 takes tiles of 80 keys and stages O in Q (225 KiB); other head_dims up to 256
// (multiples of 8) run on the next build up, TMA reading zeros past their last dimension. O goes
// through the staging by TMA stores, which run on while the consumers start their next row block
// or leave (from registers, it took 8-19% of the ping-pong rung's time at head_dim 128 and seq
// 512-2048, 3% at 4096-8192, on an H200); in a variable-length batch from registers where its
// sequence ends inside a consumer's rows.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <cuda_runtime.h>

#include "core/fast_math.cuh"
#include "core/hopper.cuh"
#include "core/hopper/pipeline.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/fragment_softmax.cuh"
#include "ops/attention/layout.cuh"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {

constexpr int kWgmmaBlockM = 128;  // query rows per block: 64 per consumer warpgroup

#if CUDALAB_SM90A
namespace wgmma_detail {

using namespace hopper;

// kHeadDim: 64, 128 or 256; a head_dim below one of them runs on its kernel, TMA filling Q, K and
// V's missing dimensions with zeros and leaving O's out.
template <int kHeadDim>
struct Layout {
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  // Keys per tile: 80 at head_dim 256 (FlashAttention-3's), whose O takes 128 registers a thread
  // (128 scores more would not fit in 240).
  static constexpr int kBlockN = kHeadDim > 128 ? 80 : 128;
  static constexpr int kStages = 2;                                      // slots of each of the K and V rings
  static constexpr int kBoxes = kHeadDim / kBlockK;                      // 64-dimension boxes a row spans
  static constexpr std::uint32_t kQBoxBytes = 64 * kRowBytes;            // 64 rows of one consumer
  static constexpr std::uint32_t kQConsumerBytes = kBoxes * kQBoxBytes;  // a consumer's Q rows
  static constexpr std::uint32_t kKvBoxBytes = kBlockN * kRowBytes;      // 128 keys x 64 dimensions
  static constexpr std::uint32_t kKvTileBytes = kBoxes * kKvBoxBytes;    // one K or V slot
  // At head_dim 256 a consumer stages O in its own Q rows, which its last scores were the last to
  // read (a tile of its own would take the block past 227 KiB); only a block a row block can.
  static constexpr bool kStagingInQ = kHeadDim > 128;
  struct Storage {
    alignas(1024) std::uint8_t q[kConsumers][kQConsumerBytes];
    alignas(1024) std::uint8_t k[kStages][kKvTileBytes];
    alignas(1024) std::uint8_t v[kStages][kKvTileBytes];
    std::uint64_t q_full;
    PipelineBarriers<kStages> k_barriers, v_barriers;
    std::uint64_t q_empty;  // the persistent form's: both consumers done with Q
    // Each consumer's rows of O, for TMA stores (a placeholder with kStagingInQ).
    alignas(kStagingInQ ? 16 : 1024) std::uint8_t o[kStagingInQ ? 1 : kConsumers][kStagingInQ ? 1 : kQConsumerBytes];
  };
  static constexpr int kSharedBytes = shared_storage_bytes<Storage>();
  // Where consumer c stages its rows of O, from the block's shared base.
  static constexpr std::uint32_t staging_offset(int consumer) {
    return static_cast<std::uint32_t>(kStagingInQ ? offsetof(Storage, q) : offsetof(Storage, o)) +
           consumer * kQConsumerBytes;
  }
  using KvPipeline = TmaPipeline<kStages, kKvTileBytes>;
};

// The consumers' named barriers (0 is __syncthreads): with kPingPong, consumer c waits on
// kTurnBarrier + c for its turn at the tensor cores; its warpgroup meets at kStoreBarrier + c
// around its staging of O.
enum NamedBarrier : int { kTurnBarrier = 1, kStoreBarrier = 3 };

struct WgmmaAttentionParams {
  float* lse;
  AttentionStrides o;  // where O's rows lie (resolved: never the default)
  std::int64_t seq;
  int heads, kv_group;  // kv_group = heads / kv_heads
  int head_dim;         // the problem's: at most the kernel's kHeadDim
  float scale;
  bool causal;
  KeyWindow window;
  // A variable-length batch (kVarlen): sequence b's query and key rows, seq and `keys` rows in all.
  const std::int32_t *cu_seqlens_q, *cu_seqlens_k;
  std::int64_t keys;
};

// Producer: the next slot of a K or V pipeline gets keys [key0, key0 + kBlockN) of (batch, kv_head),
// once both consumers released it.
template <typename L>
__device__ __forceinline__ void load_kv(const typename L::KvPipeline& pipeline, RingPosition<L::kStages>& at,
                                        const CUtensorMap* map, int key0, int kv_head, int batch) {
  const std::uint32_t barrier = pipeline.producer_acquire(at);
#pragma unroll
  for (int b = 0; b < L::kBoxes; ++b)
    tma_load(pipeline.slot(at.stage) + b * L::kKvBoxBytes, map, barrier, kBlockK * b, key0, kv_head, batch);
  at.advance();
}

// S = Q K^T for one consumer: head_dim / 16 k-steps, one committed group. K-step kk lies in box
// kk / 4 of both tiles, 32 bytes per k-step into its 128-byte rows.
template <typename T, typename L, int kHeadDim>
__device__ __forceinline__ void issue_scores(float (&s)[L::kBlockN / 2], std::uint32_t q_tile, std::uint32_t k_tile) {
  wgmma_fence();
  wgmma_ss_m64k16<T, false>(s, k_major_descriptor(q_tile, 0), k_major_descriptor(k_tile, 0));
#pragma unroll
  for (int kk = 1; kk < kHeadDim / 16; ++kk)
    wgmma_ss_m64k16<T, true>(s, k_major_descriptor(q_tile + (kk / 4) * L::kQBoxBytes, kk % 4),
                             k_major_descriptor(k_tile + (kk / 4) * L::kKvBoxBytes, kk % 4));
  wgmma_commit();
}

// O += P V for one consumer: kBlockN / 16 k-steps over the keys. V's tile is B stored k x n (keys x
// dimensions), MN-major: k-step kk starts 16 rows (2048 bytes) in, the 64-dimension boxes are
// kKvBoxBytes apart (LBO), 8-key groups 1024 bytes (SBO). P's k-step kk is p[4 kk .. 4 kk + 3].
template <typename T, typename L, int kHeadDim>
__device__ __forceinline__ void issue_values(float (&o)[kHeadDim / 2], const std::uint32_t (&p)[L::kBlockN / 4],
                                             std::uint32_t v_tile) {
#pragma unroll
  for (int kk = 0; kk < L::kBlockN / 16; ++kk) {
    const std::uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
    wgmma_rs_m64k16<T>(o, a, descriptor(v_tile + 16 * kRowBytes * kk, L::kKvBoxBytes, kAtomBytes));
  }
  wgmma_commit();
}

// Producer thread: the Q rows of a block, both consumers' 64 from query row q_row, on the q_full
// barrier.
template <typename L>
__device__ __forceinline__ void load_block_q(std::uint32_t q_tiles, const CUtensorMap* q_map, std::uint32_t q_full,
                                             int q_row, int head, int tma_batch) {
  mbarrier_arrive_expect_tx(q_full, L::kConsumers * L::kQConsumerBytes);
#pragma unroll
  for (int c = 0; c < L::kConsumers; ++c)
#pragma unroll
    for (int b = 0; b < L::kBoxes; ++b)
      tma_load(q_tiles + c * L::kQConsumerBytes + b * L::kQBoxBytes, q_map, q_full, kBlockK * b, q_row + 64 * c, head,
               tma_batch);
}

// Producer thread: the K and V tiles of one block of rows, in the order the consumers use them: K
// of the last tile, then K of each next tile before V of the one before it; V of the first tile last.
template <typename L>
__device__ __forceinline__ void load_block_kv(const typename L::KvPipeline& k_pipeline,
                                              const typename L::KvPipeline& v_pipeline, RingPosition<L::kStages>& k_at,
                                              RingPosition<L::kStages>& v_at, const CUtensorMap* k_map,
                                              const CUtensorMap* v_map, int key_row, int first_tile, int tiles,
                                              int kv_head, int tma_batch) {
  constexpr int kBlockN = L::kBlockN;
  const int last_tile = first_tile + tiles - 1;
  load_kv<L>(k_pipeline, k_at, k_map, key_row + last_tile * kBlockN, kv_head, tma_batch);
  for (int j = last_tile - 1; j >= first_tile; --j) {
    load_kv<L>(k_pipeline, k_at, k_map, key_row + j * kBlockN, kv_head, tma_batch);
    load_kv<L>(v_pipeline, v_at, v_map, key_row + (j + 1) * kBlockN, kv_head, tma_batch);
  }
  load_kv<L>(v_pipeline, v_at, v_map, key_row + first_tile * kBlockN, kv_head, tma_batch);
}

// A consumer's 64 rows of O, normalized, through its staging (128-byte swizzled boxes of 64
// dimensions, as TMA lays them out) into O's rows from q_row of (head, batch) by TMA stores, which
// run on while the consumer goes on; L from registers. The staging is written once its last stores
// have read it (issued a row block ago in the persistent form); TMA leaves out the rows past the
// sequence. The warpgroup meets twice on `barrier`; its leader must bulk_wait_all before the block
// exits. kRowsMayBeEmpty: as normalize_output_rows's. Each pair is stored as it is normalized:
// gathering them for stmatrix (as the backward's dK and dV do) cost 0-3% (H200).
template <typename T, typename L, int kHeadDim, bool kRowsMayBeEmpty = false>
__device__ __forceinline__ void store_rows_by_tma(const float (&o)[kHeadDim / 2], const SoftmaxRows& rows,
                                                  std::int64_t row0, int lane, float* lse_rows, std::int64_t seq,
                                                  float scale, std::uint32_t staging, const CUtensorMap* o_map,
                                                  int q_row, int head, int batch, int barrier) {
  const int t = static_cast<int>(threadIdx.x) % 128;
  if (t == 0) bulk_wait_read<0>();
  named_barrier_sync(barrier, 128);
  normalize_output_rows<T, kHeadDim, kRowsMayBeEmpty>(
      o, rows, lse_rows, row0, seq, scale, lane, [&](int r, int i, std::uint32_t pair) {
        const int row = 16 * (t / 32) + lane / 4 + 8 * r;  // of the consumer's 64
        store_shared(swizzled_pair_address(staging + (i / 8) * L::kQBoxBytes, row, i % 8, lane % 4), pair);
      });
  fence_async_shared();
  named_barrier_sync(barrier, 128);
  if (t == 0) {
#pragma unroll
    for (int b = 0; b < L::kBoxes; ++b) tma_store(o_map, staging + b * L::kQBoxBytes, kBlockK * b, q_row, head, batch);
    bulk_commit();
  }
}

// Where a block's 128 query rows lie against its keys: its first row, the key tiles it walks
// (first_tile .. first_tile + tiles - 1, from the last), the sequence's rows, and the shift from a
// query row to its position (keys - queries: 0 unless variable-length).
struct BlockRows {
  int q0, first_tile, tiles;
  std::int64_t queries, keys, shift;
};

// One consumer's 64 rows of a block: the first tile's scores, mask and softmax; then each next
// tile's scores issued with P V of the tile before; the last P V; O and L handed to
// store_rows(o, rows, row0, lane) (the thread's accumulators, row sums, first row and lane).
// q_read() runs once the block's last scores are done (Q no longer read), computed() once the last
// P V is.
// With kPingPong the turns are taken here (with kTurnsAtEnds for the first scores and the last
// P V too); the first arrival and the last wait that balance them are the caller's.
template <typename T, int kHeadDim, bool kPingPong, bool kWindowed, bool kVarlen, bool kTurnsAtEnds, typename StoreRows,
          typename QRead, typename Computed>
__device__ __forceinline__ void consume_block(
    const WgmmaAttentionParams& p, const typename Layout<kHeadDim>::KvPipeline& k_pipeline,
    const typename Layout<kHeadDim>::KvPipeline& v_pipeline, RingPosition<Layout<kHeadDim>::kStages>& k_ring,
    RingPosition<Layout<kHeadDim>::kStages>& v_ring, std::uint32_t q_tile, std::uint32_t q_full, std::uint32_t q_phase,
    int consumer, const BlockRows& block, StoreRows store_rows, QRead q_read, Computed computed) {
  using L = Layout<kHeadDim>;
  constexpr int kBlockN = L::kBlockN;
  const int t = static_cast<int>(threadIdx.x) % 128, lane = t % 32;
  const bool leader = t == 0;
  const int first_tile = block.first_tile, tiles = block.tiles;
  const std::int64_t keys = block.keys;
  const auto release = [&](const typename L::KvPipeline& pipeline, const RingPosition<L::kStages>& ring) {
    if (leader) pipeline.consumer_release(ring.stage);
  };
  // Ping-pong: this consumer waits on its turn barrier before issuing its GEMMs and, once issued,
  // lets the other go (its barrier). No branch inside the loop: ptxas serializes every wgmma when
  // a barrier sits on a path it sees as divergent (C7520).
  const int own_barrier = kTurnBarrier + consumer, other_barrier = kTurnBarrier + 1 - consumer;

  const float exponent_scale = p.scale * kLog2e;
  const std::int64_t row0 = block.q0 + 64 * consumer + 16 * (t / 32) + lane / 4;  // row g; row g + 8 is + 8
  // Past the first tile, only a sliding window's tiles may need the mask: those that cross an edge
  // of the window of the consumer's 64 rows (at their positions). Without a window the only tile
  // with the causal diagonal or the sequence's end is the first at 128-key tiles (kWindowed false:
  // the loop carries no mask at all; a check on every tile that never passed cost 6-20%, measured);
  // tiles of fewer keys than the block's rows test each tile for the diagonal.
  const std::int64_t consumer_row = block.q0 + 64 * consumer;
  const std::int64_t consumer_position = consumer_row + block.shift, position0 = row0 + block.shift;
  [[maybe_unused]] const auto masked = [&](std::int64_t key0) {
    return key0 < consumer_position + 63 - p.window.left || key0 + kBlockN - 1 > consumer_position + p.window.right ||
           key0 + kBlockN > keys;
  };
  float s[kBlockN / 2];
  float o[kHeadDim / 2];
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0f;
  std::uint32_t pr[kBlockN / 4];
  SoftmaxRows rows;  // rows g and g + 8 of the thread's warp

  // The first tile (the last keys): scores, the mask, the softmax. With kTurnsAtEnds its scores and
  // the last P V take turns too, so that at a row block's start and end one consumer's softmax and
  // stores of O run beside the other's products (the persistent form: 0.96-0.99x the time at seq
  // 512-2048 on an H200; a block a row block: 1.02x at seq 4096-8192, head_dim 128).
  if constexpr (kTurnsAtEnds) named_barrier_sync(own_barrier, 256);
  mbarrier_wait(q_full, q_phase);
  k_pipeline.consumer_wait(k_ring);
  issue_scores<T, L, kHeadDim>(s, q_tile, k_pipeline.slot(k_ring.stage));
  if constexpr (kTurnsAtEnds) named_barrier_arrive(other_barrier, 256);
  wgmma_wait<0>();
  fence_accumulators(s);
  release(k_pipeline, k_ring);
  k_ring.advance();
  if (tiles == 1) q_read();
  const std::int64_t last_key0 = static_cast<std::int64_t>(first_tile + tiles - 1) * kBlockN;
  if constexpr (kWindowed) {
    mask_scores(s, last_key0, position0, keys, p.window, lane);
  } else {
    mask_scores(s, last_key0, row0, keys, CausalMask{p.causal}, lane);
  }
  online_softmax(s, rows, exponent_scale);
  pack_fragment<T>(pr, s);

  for (int j = 1; j < tiles; ++j) {
    if constexpr (kPingPong) named_barrier_sync(own_barrier, 256);
    // O's rescale and P's packing stay above the fence issue_scores starts with (left to itself
    // the compiler sinks them to the P V wgmma, and ptxas injects a fence there).
    fence_accumulators(o);
    fence_registers(pr);
    // Both tiles are waited for before the first wgmma: a wait loop between the two GEMMs makes
    // ptxas inject another fence before the second (C7519).
    k_pipeline.consumer_wait(k_ring);
    v_pipeline.consumer_wait(v_ring);
    issue_scores<T, L, kHeadDim>(s, q_tile, k_pipeline.slot(k_ring.stage));
    issue_values<T, L, kHeadDim>(o, pr, v_pipeline.slot(v_ring.stage));
    if constexpr (kPingPong) named_barrier_arrive(other_barrier, 256);
    wgmma_wait<1>();  // S_j is ready; P V still runs
    fence_accumulators(s);
    release(k_pipeline, k_ring);
    k_ring.advance();
    if (j == tiles - 1) q_read();
    const std::int64_t key0 = static_cast<std::int64_t>(first_tile + tiles - 1 - j) * kBlockN;
    if constexpr (kWindowed) {
      if (masked(key0)) mask_scores(s, key0, position0, keys, p.window, lane);
    } else if constexpr (kBlockN < kWgmmaBlockM) {
      // Tiles shorter than the block: the causal diagonal may cross the next ones too.
      if (p.causal && key0 + kBlockN - 1 > consumer_row) mask_scores(s, key0, row0, keys, CausalMask{true}, lane);
    }
    const float2 correction = online_softmax(s, rows, exponent_scale);
    wgmma_wait<0>();  // P V is done: O and P may change
    fence_accumulators(o);
    release(v_pipeline, v_ring);
    v_ring.advance();
    rescale_rows(o, correction);
    pack_fragment<T>(pr, s);
  }
  // The last P V (tile 0).
  if constexpr (kTurnsAtEnds) named_barrier_sync(own_barrier, 256);
  fence_accumulators(o);
  fence_registers(pr);
  v_pipeline.consumer_wait(v_ring);
  wgmma_fence();
  issue_values<T, L, kHeadDim>(o, pr, v_pipeline.slot(v_ring.stage));
  if constexpr (kTurnsAtEnds) named_barrier_arrive(other_barrier, 256);
  wgmma_wait<0>();
  fence_accumulators(o);
  release(v_pipeline, v_ring);
  v_ring.advance();
  computed();
  store_rows(o, rows, row0, lane);
}

// A block of 128 query rows of one (batch, head) (blockIdx.y, blockIdx.z), blockIdx.x the row block.
// kVarlen: a variable-length batch (blockIdx.z the sequence). With kWindowed the general mask about
// positions aligned at the sequence's end; without, self-attention (each sequence's queries are its
// keys, shift 0), whose causal diagonal and end lie in the first tile as in a dense batch.
template <typename T, int kHeadDim, bool kPingPong, bool kWindowed, bool kVarlen>
__global__ void __launch_bounds__(Layout<kHeadDim>::kThreads, 1)
    attention_wgmma_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                           const __grid_constant__ CUtensorMap v_map, const __grid_constant__ CUtensorMap o_map,
                           T* __restrict__ o_out, const WgmmaAttentionParams p) {
#if CUDALAB_SM90A_DEVICE
  using L = Layout<kHeadDim>;
  constexpr int kBlockN = L::kBlockN;
  extern __shared__ std::uint8_t dynamic_shared[];
  using Storage = typename L::Storage;
  const std::uint32_t base = aligned_shared_base(dynamic_shared);
  const std::uint32_t q_full = base + offsetof(Storage, q_full);
  const typename L::KvPipeline k_pipeline(base + offsetof(Storage, k), base + offsetof(Storage, k_barriers));
  const typename L::KvPipeline v_pipeline(base + offsetof(Storage, v), base + offsetof(Storage, v_barriers));
  // A variable-length batch's sequence, read before the barriers are set up, which hides some of
  // the loads' latency.
  [[maybe_unused]] PackedRows q_rows{}, k_rows{};
  if constexpr (kVarlen) {
    q_rows = packed_rows(p.cu_seqlens_q, static_cast<int>(blockIdx.z), p.seq);
    k_rows = packed_rows(p.cu_seqlens_k, static_cast<int>(blockIdx.z), p.keys);
  }
  if (threadIdx.x == 0) mbarrier_init(q_full, 1);
  k_pipeline.init(L::kConsumers);
  v_pipeline.init(L::kConsumers);
  __syncthreads();

  // Causal blocks near the end of the sequence have the most key tiles: they start first.
  const int q0 = static_cast<int>(p.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * kWgmmaBlockM;
  const int head = static_cast<int>(blockIdx.y), batch = static_cast<int>(blockIdx.z);
  // The block's sequence: its first query and key rows, its lengths, and the shift from a query row
  // to its position (keys - queries: 0 unless variable-length). TMA's batch coordinate and the
  // batch of O and L are 0 in a variable-length batch, whose sequences lie along the rows.
  std::int64_t q_begin = 0, k_begin = 0, queries = p.seq, keys = p.seq, shift = 0;
  int tma_batch = batch;
  if constexpr (kVarlen) {
    if (q0 >= q_rows.count) return;  // past this sequence's queries: the whole block leaves
    q_begin = q_rows.begin, queries = q_rows.count, k_begin = k_rows.begin, keys = k_rows.count;
    shift = keys - queries;
    tma_batch = 0;
  }
  const int out_batch = kVarlen ? 0 : batch;
  const int zq = out_batch * p.heads + head, kv_head = head / p.kv_group;
  // The key tiles some row of the block sees: none past its last row when causal, none outside a
  // sliding window; tiles first_tile .. first_tile + tiles - 1, walked from the last. Without a
  // window the same in the causal mask's own terms, which keeps that kernel's code as it was.
  int first_tile = 0, tiles = 0;
  if constexpr (kWindowed) {
    first_tile = static_cast<int>(p.window.first_key(q0 + shift) / kBlockN);
    // At most 0 where no row sees a key (only in a variable-length batch).
    tiles = static_cast<int>(ceil_div<std::int64_t>(p.window.key_end(q0 + kWgmmaBlockM - 1 + shift, keys), kBlockN)) -
            first_tile;
  } else {
    tiles = static_cast<int>(
        ceil_div<std::int64_t>(p.causal ? min(keys, static_cast<std::int64_t>(q0) + kWgmmaBlockM) : keys, kBlockN));
  }
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  // Where the block's rows of O and L start.
  const auto o_rows = [&] { return o_out + out_batch * p.o.batch + head * p.o.head + q_begin * p.o.row; };
  const auto lse_rows = [&] { return p.lse + static_cast<std::int64_t>(zq) * p.seq + q_begin; };
  if constexpr (kVarlen) {
    // A block whose rows see no key (a sequence without keys, or queries before the first key's
    // position under a causal mask): O = 0 and L = -inf, as a row that sees no key gets elsewhere.
    if (tiles <= 0) {
      if (warpgroup > 0) {
        const int t = static_cast<int>(threadIdx.x) % 128;
        const std::int64_t row0 = q0 + 64 * (warpgroup - 1) + 16 * (t / 32) + t % 32 / 4;
        float zeros[kHeadDim / 2] = {};
        store_output_rows<T, kHeadDim, true>(zeros, SoftmaxRows{}, o_rows(), p.o.row, lse_rows(), row0, queries,
                                             p.scale, t % 32, p.head_dim);
      }
      return;
    }
  }

  if (warpgroup == 0) {
    setmaxnreg_dec<24>();
    if (threadIdx.x == 0) {
      load_block_q<L>(base + offsetof(Storage, q), &q_map, q_full, static_cast<int>(q_begin) + q0, head, tma_batch);
      RingPosition<L::kStages> k_at, v_at;
      load_block_kv<L>(k_pipeline, v_pipeline, k_at, v_at, &k_map, &v_map, static_cast<int>(k_begin), first_tile, tiles,
                       kv_head, tma_batch);
    }
    return;
  }

  setmaxnreg_inc<240>();
  const int consumer = warpgroup - 1;
  const std::uint32_t q_tile = base + offsetof(Storage, q) + consumer * L::kQConsumerBytes;
  RingPosition<L::kStages> k_ring, v_ring;
  // Consumer 1 opens the first turn, so consumer 0's barrier gets one arrival more than consumer 0
  // waits for in the block; consumer 0 takes it at the end.
  const int own_barrier = kTurnBarrier + consumer, other_barrier = kTurnBarrier + 1 - consumer;
  if (kPingPong && consumer == 1) named_barrier_arrive(other_barrier, 256);
  // O by TMA stores. A variable-length batch's sequences lie along one tensor's rows, so a
  // consumer whose 64 rows run past its sequence's end (TMA would write them into the next
  // sequence's) stores from registers; there a row may have seen no key.
  consume_block<T, kHeadDim, kPingPong, kWindowed, kVarlen, false>(
      p, k_pipeline, v_pipeline, k_ring, v_ring, q_tile, q_full, 0, consumer,
      BlockRows{q0, first_tile, tiles, queries, keys, shift},
      [&](const float(&o)[kHeadDim / 2], const SoftmaxRows& rows, std::int64_t row0, int lane) {
        const std::uint32_t o_staging = base + L::staging_offset(consumer);
        if constexpr (kVarlen) {
          if (q0 + 64 * consumer + 64 <= queries) {
            store_rows_by_tma<T, L, kHeadDim, true>(o, rows, row0, lane, lse_rows(), queries, p.scale, o_staging,
                                                    &o_map, static_cast<int>(q_begin) + q0 + 64 * consumer, head,
                                                    tma_batch, kStoreBarrier + consumer);
          } else {
            store_output_rows<T, kHeadDim, true>(o, rows, o_rows(), p.o.row, lse_rows(), row0, queries, p.scale, lane,
                                                 p.head_dim);
          }
        } else {
          store_rows_by_tma<T, L, kHeadDim>(o, rows, row0, lane, lse_rows(), p.seq, p.scale, o_staging, &o_map,
                                            q0 + 64 * consumer, head, batch, kStoreBarrier + consumer);
        }
      },
      [] {},
      [&] {
        if (kPingPong && consumer == 0) named_barrier_sync(own_barrier, 256);
      });
  if (threadIdx.x % 128 == 0) bulk_wait_all();
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

// The persistent form, for a batch without a window (dense, causal up to kPersistentCausalSeq,
// wgmma_forward_persistent; or variable-length self-attention, one array of lengths): a block's
// loads of Q and its first K, its first scores and its last P V and stores weigh most at short
// sequences, and one block an SM walking the row blocks has its producer load the next block's Q
// (once both consumers have their last scores) and K and V while the consumers finish, and its
// consumers take turns across row blocks. Row blocks are taken in rounds of one per block, the
// b-th of even rounds and the b-th from the end of odd ones: under a causal mask each block pairs a
// long row block with a short one, and the blocks of a (batch, head) run together, sharing its K
// and V in L2. Blocks walk rows in the grid's order: (batch, head) slowest, then the row block, the
// longest first. kVarlen: every sequence has row_blocks slots (the longest's count), and the slots
// past a sequence's end are passed over; the dense batch's code is kept apart (written together,
// the dense kernel ran 1-3% slower, H200).
template <typename T, int kHeadDim, bool kPingPong, bool kVarlen>
__global__ void __launch_bounds__(Layout<kHeadDim>::kThreads, 1)
    attention_wgmma_persistent_kernel(const __grid_constant__ CUtensorMap q_map,
                                      const __grid_constant__ CUtensorMap k_map,
                                      const __grid_constant__ CUtensorMap v_map,
                                      const __grid_constant__ CUtensorMap o_map, const WgmmaAttentionParams p,
                                      int row_blocks, int row_blocks_total, T* o_out) {
#if CUDALAB_SM90A_DEVICE
  using L = Layout<kHeadDim>;
  extern __shared__ std::uint8_t dynamic_shared[];
  using Storage = typename L::Storage;
  const std::uint32_t base = aligned_shared_base(dynamic_shared);
  const std::uint32_t q_full = base + offsetof(Storage, q_full), q_empty = base + offsetof(Storage, q_empty);
  const typename L::KvPipeline k_pipeline(base + offsetof(Storage, k), base + offsetof(Storage, k_barriers));
  const typename L::KvPipeline v_pipeline(base + offsetof(Storage, v), base + offsetof(Storage, v_barriers));
  if (threadIdx.x == 0) {
    mbarrier_init(q_full, 1);
    mbarrier_init(q_empty, L::kConsumers);
  }
  k_pipeline.init(L::kConsumers);
  v_pipeline.init(L::kConsumers);
  __syncthreads();

  const int blocks = static_cast<int>(gridDim.x), me = static_cast<int>(blockIdx.x);
  // The row block of round r, past row_blocks_total when this block has none.
  const auto row_block_of = [&](int round) { return round * blocks + (round % 2 == 1 ? blocks - 1 - me : me); };
  // A variable-length batch's sequence zq / heads: its query and key rows.
  [[maybe_unused]] const auto sequence_of = [&](int zq, PackedRows& q_rows, PackedRows& k_rows) {
    q_rows = packed_rows(p.cu_seqlens_q, zq / p.heads, p.seq);
    k_rows = packed_rows(p.cu_seqlens_k, zq / p.heads, p.keys);
  };
  // Its rows, (batch, head) matrix (a sequence's in a variable-length batch) and key tiles.
  const auto block_of = [&](int index, int& zq) {
    zq = index / row_blocks;
    const int in_head = index - zq * row_blocks;
    const int q0 = (p.causal ? row_blocks - 1 - in_head : in_head) * kWgmmaBlockM;
    if constexpr (kVarlen) {
      PackedRows q_rows, k_rows;
      sequence_of(zq, q_rows, k_rows);
      const int tiles = static_cast<int>(ceil_div<std::int64_t>(
          p.causal ? min(k_rows.count, static_cast<std::int64_t>(q0) + kWgmmaBlockM) : k_rows.count, L::kBlockN));
      return BlockRows{q0, 0, tiles, q_rows.count, k_rows.count, k_rows.count - q_rows.count};
    } else {
      const int tiles = static_cast<int>(ceil_div<std::int64_t>(
          p.causal ? min(p.seq, static_cast<std::int64_t>(q0) + kWgmmaBlockM) : p.seq, L::kBlockN));
      return BlockRows{q0, 0, tiles, p.seq, p.seq, 0};
    }
  };
  // visit(n, block, zq) for the n-th row block this block takes, in order (n is the round in a
  // dense batch, which passes none over).
  const auto for_each_row_block = [&](auto&& visit) {
    [[maybe_unused]] int n = 0;
    for (int round = 0;; ++round) {
      const int index = row_block_of(round);
      if (index >= row_blocks_total) return;
      int zq = 0;
      const BlockRows block = block_of(index, zq);
      if constexpr (kVarlen) {
        if (block.q0 >= block.queries) continue;  // past its sequence's end
        visit(n++, block, zq);
      } else {
        visit(round, block, zq);
      }
    }
  };
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;

  if (warpgroup == 0) {
    setmaxnreg_dec<24>();
    if (threadIdx.x == 0) {
      RingPosition<L::kStages> k_at, v_at;
      for_each_row_block([&](int round, const BlockRows& block, int zq) {
        const int head = zq % p.heads;
        [[maybe_unused]] const int batch = zq / p.heads;  // a dense batch's
        if (round > 0) mbarrier_wait(q_empty, (round - 1) & 1);
        if constexpr (kVarlen) {
          // The sequences lie along the rows of batch 0.
          PackedRows q_rows, k_rows;
          sequence_of(zq, q_rows, k_rows);
          load_block_q<L>(base + offsetof(Storage, q), &q_map, q_full, static_cast<int>(q_rows.begin) + block.q0, head,
                          0);
          load_block_kv<L>(k_pipeline, v_pipeline, k_at, v_at, &k_map, &v_map, static_cast<int>(k_rows.begin), 0,
                           block.tiles, head / p.kv_group, 0);
        } else {
          load_block_q<L>(base + offsetof(Storage, q), &q_map, q_full, block.q0, head, batch);
          load_block_kv<L>(k_pipeline, v_pipeline, k_at, v_at, &k_map, &v_map, 0, 0, block.tiles, head / p.kv_group,
                           batch);
        }
      });
    }
    return;
  }

  setmaxnreg_inc<240>();
  const int consumer = warpgroup - 1;
  const bool leader = threadIdx.x % 128 == 0;
  // The turns run on from one row block to the next: consumer 1 opens the first, consumer 0 takes
  // the extra arrival after the last.
  const std::uint32_t q_tile = base + offsetof(Storage, q) + consumer * L::kQConsumerBytes;
  RingPosition<L::kStages> k_ring, v_ring;
  const int own_barrier = kTurnBarrier + consumer, other_barrier = kTurnBarrier + 1 - consumer;
  const std::uint32_t o_staging = base + L::staging_offset(consumer);
  if (kPingPong && consumer == 1) named_barrier_arrive(other_barrier, 256);
  for_each_row_block([&](int round, const BlockRows& block, int zq) {
    const int head = zq % p.heads;
    [[maybe_unused]] const int batch = zq / p.heads;  // a dense batch's
    consume_block<T, kHeadDim, kPingPong, false, kVarlen, kPingPong>(
        p, k_pipeline, v_pipeline, k_ring, v_ring, q_tile, q_full, static_cast<std::uint32_t>(round & 1), consumer,
        block,
        [&](const float(&o)[kHeadDim / 2], const SoftmaxRows& rows, std::int64_t row0, int lane) {
          if constexpr (kVarlen) {
            // L's rows are [heads, total rows]. The sequences lie along one tensor's rows: a consumer
            // whose rows run past its sequence's end stores from registers (TMA would write the
            // next one's).
            PackedRows q_rows, k_rows;
            sequence_of(zq, q_rows, k_rows);
            float* lse_rows = p.lse + static_cast<std::int64_t>(head) * p.seq + q_rows.begin;
            const int q_row = block.q0 + 64 * consumer;
            if (q_row + 64 > block.queries) {
              store_output_rows<T, kHeadDim>(o, rows, o_out + head * p.o.head + q_rows.begin * p.o.row, p.o.row,
                                             lse_rows, row0, block.queries, p.scale, lane, p.head_dim);
            } else {
              store_rows_by_tma<T, L, kHeadDim>(o, rows, row0, lane, lse_rows, block.queries, p.scale, o_staging,
                                                &o_map, static_cast<int>(q_rows.begin) + q_row, head, 0,
                                                kStoreBarrier + consumer);
            }
          } else {
            store_rows_by_tma<T, L, kHeadDim>(o, rows, row0, lane, p.lse + static_cast<std::int64_t>(zq) * p.seq, p.seq,
                                              p.scale, o_staging, &o_map, block.q0 + 64 * consumer, head, batch,
                                              kStoreBarrier + consumer);
          }
        },
        [&] {
          if (leader) mbarrier_arrive(q_empty);
        },
        [] {});
  });
  if (kPingPong && consumer == 0) named_barrier_sync(own_barrier, 256);
  if (leader) bulk_wait_all();
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

template <typename T, int kHeadDim, bool kPingPong, bool kWindowed, bool kVarlen = false>
void launch_wgmma_window(const AttentionArgs<T>& args, cudaStream_t stream) {
  using L = Layout<kHeadDim>;
  const VarlenRows& varlen = args.varlen;
  const std::int64_t keys = key_rows(args);
  const std::int64_t key_map_rows = std::max<std::int64_t>(keys, 1);  // a batch without keys reads none
  const CUtensorMap q_map = head_tensor_map(args.q, args.layout.q, args, args.heads, args.seq, 64);
  const CUtensorMap k_map = head_tensor_map(args.k, args.layout.k, args, args.kv_heads, key_map_rows, L::kBlockN);
  const CUtensorMap v_map = head_tensor_map(args.v, args.layout.v, args, args.kv_heads, key_map_rows, L::kBlockN);
  const CUtensorMap o_map = head_tensor_map(args.o, args.layout.o, args, args.heads, args.seq, 64);
  // A variable-length batch's window is about positions up to the longest sequence's.
  const std::int64_t span = kVarlen ? varlen.max_seqlen_q + varlen.max_seqlen_k : args.seq;
  const WgmmaAttentionParams params{args.lse,
                                    resolved(args.layout.o, args.heads, args.seq, args.head_dim),
                                    args.seq,
                                    static_cast<int>(args.heads),
                                    static_cast<int>(args.heads / args.kv_heads),
                                    static_cast<int>(args.head_dim),
                                    args.scale,
                                    args.causal,
                                    key_window(span, args.causal, args.window_left, args.window_right),
                                    varlen.cu_seqlens_q,
                                    varlen.cu_seqlens_k,
                                    keys};
  if constexpr (kPingPong && !kWindowed && !L::kStagingInQ) {
    // The persistent form, against a block a row block (H200, bf16, both storing O by TMA): without
    // a mask 0.92-0.98x the time at seq 4096-16384 (0.78-0.95x at 512-1024 before O went by TMA);
    // causal 0.93-0.95x at 8192 but 1.43x at 16384, where its zig-zag rounds, which cross heads,
    // no longer pair long row blocks with short ones and the hardware's scheduler, given the
    // longest first, balances better. A variable-length batch (self-attention: no window here)
    // takes it by its longest sequence.
    const std::int64_t longest = kVarlen ? varlen.max_seqlen_q : args.seq;
    const std::int64_t row_blocks = ceil_div<std::int64_t>(longest, kWgmmaBlockM);
    const std::int64_t total = row_blocks * (kVarlen ? varlen.sequences : args.batch) * args.heads;
    if (wgmma_forward_persistent(longest, args.causal) && total <= std::numeric_limits<int>::max()) {
      auto* kernel = attention_wgmma_persistent_kernel<T, kHeadDim, kPingPong, kVarlen>;
      set_shared_memory(kernel, L::kSharedBytes);
      const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(total, current_gpu().sm_count));
      kernel<<<blocks, L::kThreads, L::kSharedBytes, stream>>>(
          q_map, k_map, v_map, o_map, params, static_cast<int>(row_blocks), static_cast<int>(total), args.o);
      CUDALAB_CHECK_LAUNCH();
      return;
    }
  }
  auto* kernel = attention_wgmma_kernel<T, kHeadDim, kPingPong, kWindowed, kVarlen>;
  set_shared_memory(kernel, L::kSharedBytes);
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(kVarlen ? varlen.max_seqlen_q : args.seq, kWgmmaBlockM)),
                  static_cast<unsigned>(args.heads), static_cast<unsigned>(kVarlen ? varlen.sequences : args.batch));
  kernel<<<grid, L::kThreads, L::kSharedBytes, stream>>>(q_map, k_map, v_map, o_map, args.o, params);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace wgmma_detail
#endif  // CUDALAB_SM90A

// f(std::integral_constant<int, D>) with D the kernel a head_dim runs on: 64, 128 or 256, the
// smallest at least head_dim.
template <typename F>
void with_kernel_head_dim(std::int64_t head_dim, F f) {
  if (head_dim <= 64) return f(std::integral_constant<int, 64>{});
  if (head_dim <= 128) return f(std::integral_constant<int, 128>{});
  f(std::integral_constant<int, 256>{});
}

// A rung's launcher: checks, then the kernel for args' head_dim.
template <typename T, bool kPingPong>
void launch_attention_wgmma(const char* name, const AttentionArgs<T>& args, cudaStream_t stream) {
  static_assert(sizeof(T) == 2, "bf16 or f16");
  const std::string why = wgmma_limits(shape_of(args, current_gpu().compute_capability));
  CUDALAB_REQUIRE(why.empty(), std::string(name) + ": " + why);
  CUDALAB_REQUIRE(is_aligned16(args.q) && is_aligned16(args.k) && is_aligned16(args.v) && is_aligned16(args.o),
                  std::string(name) + ": q, k, v and o must be 16-byte aligned (TMA)");
  CUDALAB_REQUIRE(strides_in_vectors(args.layout), std::string(name) + ": every stride must be a multiple of 8 (TMA)");
#if CUDALAB_SM90A
  if (args.batch == 0 || args.heads == 0 || args.seq == 0 || args.head_dim == 0) return;
  if (args.varlen.on()) {
    // Variable-length batches take the library's rung only. Self-attention (one array of lengths for
    // queries and keys) with no window takes the dense batch's mask, which costs no check past the
    // first tile (the general mask's cost 12-29% at seq 512-1024, measured); anything else the
    // general mask about positions aligned at each sequence's end.
    CUDALAB_REQUIRE(kPingPong, std::string(name) + ": variable-length batches run on wgmma_pingpong");
    if constexpr (kPingPong) {
      const VarlenRows& varlen = args.varlen;
      if (varlen.sequences == 0 || varlen.max_seqlen_q == 0) return;
      const bool general = varlen.cu_seqlens_q != varlen.cu_seqlens_k || args.window_left >= 0 ||
                           (!args.causal && args.window_right >= 0);
      const auto launch = [&](auto head_dim, auto windowed) {
        wgmma_detail::launch_wgmma_window<T, decltype(head_dim)::value, true, decltype(windowed)::value, true>(args,
                                                                                                               stream);
      };
      return with_kernel_head_dim(args.head_dim, [&](auto head_dim) {
        if (general) return launch(head_dim, std::true_type{});
        launch(head_dim, std::false_type{});
      });
    }
  }
  const bool windowed = window_binds(args);
  with_kernel_head_dim(args.head_dim, [&](auto head_dim) {
    constexpr int kHeadDim = decltype(head_dim)::value;
    if (windowed) return wgmma_detail::launch_wgmma_window<T, kHeadDim, kPingPong, true>(args, stream);
    wgmma_detail::launch_wgmma_window<T, kHeadDim, kPingPong, false>(args, stream);
  });
#else
  (void)stream;
#endif
}

}  // namespace cudalab::attention_variants
