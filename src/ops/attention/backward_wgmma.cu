// Backward rung `wgmma`: FlashAttention-2's backward (the `mma` rung's algorithm) on Hopper's
// warpgroup instructions, sm_90a only, in FlashAttention-3's shape (Dao-AILab/flash-attention
// hopper/, arXiv 2407.08608): a block of three warpgroups owns 128 keys of one (batch, kv head) and
// walks query tiles (64 rows at head_dim 128, 128 at 64) of every query head of the group.
//   Warpgroup 0, the producer, gives its registers back (setmaxnreg.dec 24). Its warp 0 loads K and
//     V once, then each tile's Q and dO by TMA and its rows' L and D by 4-byte cp.async into a ring
//     of slots (a full barrier that both complete, an empty barrier per slot); its warps 1 and 2
//     each add one consumer's dQ tile to dQ's fp32 accumulator in L2 by TMA bulk reductions
//     (cp.reduce.async.bulk .add).
//   Warpgroups 1 and 2, the consumers (setmaxnreg.inc 240), own 64 keys each. Per tile:
//     S^T = K Q^T, dP^T = V dO^T   wgmma m64nM (M the tile's rows) from shared memory (keys as rows,
//                                  so P^T and dS^T come out in the accumulator layout that the RS
//                                  form takes as A);
//     P^T, dS^T                    exp2 with the scale folded in, L and D of the tile's rows from
//                                  the slot, rounded to T in registers (P^T while dP^T runs);
//     dV += P^T dO, dK += dS^T Q   wgmma RS, dO and Q read MN-major (the forward's P V layout);
//     dQ += dS K                   dS^T goes to shared memory transposed (dS, K-major; two buffers,
//                                  by the tile's parity), then each consumer multiplies it by K over
//                                  all 128 keys, for half of the dimensions (head_dim 128) or half of
//                                  the rows (64); the fp32 result goes to the consumer's tile, which
//                                  its producer warp adds to the accumulator.
//   At head_dim 128, dK's product runs on the tensor cores while dQ goes out and the next tile
//   starts (it holds its Q slot until the next tile's first wait, hence a third slot); at 64 the
//   128-row tiles leave no registers for that, and dK is retired each tile.
//   At the end dK and dV go out through the consumer's rows of K and V by TMA stores (from
//   registers in a variable-length batch).
// The consumers meet once a tile, when both halves of dS are stored, and otherwise wait only on
// barriers of their own: the slot, their dQ tile. Fixes, relative to `mma`: no ldmatrix traffic or
// fragment registers for shared operands (the mma rung's shared-memory reads, 256-384 bytes per
// mma.sync against the SM's 128 a clock, bounded it), the next tiles' copies overlapped, dQ added
// once per 128 keys by bulk reductions instead of a thread's atomics per 64 (measured against
// float2 atomics from registers: +4% at head_dim 128, +19% at 64). Against the same steps in two
// warpgroups that issued their own copies and met at two block barriers a tile: 0.92-0.98x the time
// at head_dim 128, 0.83-0.92x at 64, and the 128-row tiles at 64 0.84-0.90x more (H200). Costs: 227
// KiB of shared memory at head_dim 128 (one block per SM), 240 registers (36 bytes spilled at 128
// and 28 at 64, 8 more each since dK and dV go out through shared memory).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/fast_math.cuh"
#include "core/flags.cuh"
#include "core/hopper.cuh"
#include "core/hopper/pipeline.cuh"
#include "core/launch.cuh"
#include "core/mma_sync.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/backward_fused.cuh"
#include "ops/attention/fragment_softmax.cuh"
#include "ops/attention/layout.cuh"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {

#if CUDALAB_SM90A
namespace {

using namespace hopper;

template <int kHeadDim>
struct BackwardLayout {
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);  // the producer warpgroup and the consumers
  static constexpr int kBlockN = 128;                      // keys per block, 64 per consumer
  // Query rows per tile: 128 at head_dim 64, where 64 left each product too short against a tile's
  // fixed work (FlashAttention-3's choice too); 64 at 128, where 128 would not fit the registers.
  static constexpr int kBlockM = kHeadDim == 64 ? 128 : 64;
  // Q and dO slots: three at head_dim 128, where the tile before last's dK may still read its slot;
  // two at 64, where dK is retired each tile (and a third would not fit beside the larger dS tiles).
  static constexpr int kSlots = kHeadDim == 64 ? 2 : 3;
  static constexpr int kScoreRegisters = kBlockM / 2;  // S^T and dP^T: 64 keys x kBlockM queries a consumer
  static constexpr int kDqRows = 64;                   // a consumer's dQ tile: 64 query rows x 64 dimensions
  static constexpr int kBoxes = kHeadDim / kBlockK;
  static constexpr std::uint32_t kKvBoxBytes = kBlockN * kRowBytes;
  static constexpr std::uint32_t kKvTileBytes = kBoxes * kKvBoxBytes;
  static constexpr std::uint32_t kQBoxBytes = kBlockM * kRowBytes;
  static constexpr std::uint32_t kQTileBytes = kBoxes * kQBoxBytes;
  static constexpr std::uint32_t kDsBoxBytes = kBlockM * kRowBytes;  // kBlockM query rows x 64 keys
  static constexpr std::uint32_t kDsTileBytes = kConsumers * kDsBoxBytes;
  static constexpr std::uint32_t kDqBoxBytes = kDqRows * kRowBytes;  // 64 query rows x 32 fp32 dimensions
  static constexpr std::uint32_t kDqGroupBytes = 2 * kDqBoxBytes;    // a consumer's 64 dimensions
  static constexpr int kStatsFloats = 2 * kBlockM;                   // L, then D, of a tile's rows
  // Shared memory: K, V, the slots of Q and of dO, two dS tiles (a box of 64 keys per consumer),
  // each consumer's fp32 dQ tile, the slots' L and D, then the barriers (K and V; the slots' full
  // and empty).
  struct Storage {
    alignas(1024) std::uint8_t k[kKvTileBytes];
    alignas(1024) std::uint8_t v[kKvTileBytes];
    alignas(1024) std::uint8_t q[kSlots][kQTileBytes];
    alignas(1024) std::uint8_t d_o[kSlots][kQTileBytes];
    alignas(1024) std::uint8_t ds[2][kDsTileBytes];
    alignas(1024) std::uint8_t dq[kConsumers][kDqGroupBytes];
    float stats[kSlots][kStatsFloats];
    std::uint64_t kv_full;
    PipelineBarriers<kSlots> slots;
  };
  static constexpr std::uint32_t kK = offsetof(Storage, k), kV = offsetof(Storage, v);
  static constexpr std::uint32_t kQ = offsetof(Storage, q), kDo = offsetof(Storage, d_o);
  static constexpr std::uint32_t kDs = offsetof(Storage, ds), kDq = offsetof(Storage, dq);
  static constexpr std::uint32_t kStats = offsetof(Storage, stats);
  static constexpr std::uint32_t kKvFull = offsetof(Storage, kv_full), kSlotBarriers = offsetof(Storage, slots);
  static constexpr int kSharedBytes = shared_storage_bytes<Storage>();
  using Pipeline = TmaPipeline<kSlots, kQTileBytes>;  // slot s: Q at kQ + s kQTileBytes
};

// Named barriers (0 is __syncthreads): both dS halves stored (both consumers), and consumer c's dQ
// tile full and empty (the consumer and its producer warp).
// After the walk, both consumers done with K (kKeysRead), and consumer c's dK and dV staged
// (kGradientsStaged + c).
enum NamedBarrier : int { kDsStored = 1, kDqFull = 3, kDqEmpty = 5, kKeysRead = 7, kGradientsStaged = 8 };
constexpr int kDqHandOverThreads = 128 + 32;

struct BackwardParams {
  const float* lse;
  const float* delta;
  AttentionStrides dk, dv;  // where dK's and dV's rows lie (resolved: never the default)
  std::int64_t seq;
  int heads, kv_heads;
  int head_dim;  // the problem's: at most the kernel's kHeadDim
  float scale;
  BasicKeyWindow<int> window;  // 32-bit: the limits keep seq below 2^31
  std::int64_t chunk_pairs;    // (kv head, batch) pairs a chunk of the block order (the kernel's comment)
  // A variable-length batch (kVarlen): sequence b's query and key rows, seq and `keys` rows in all.
  const std::int32_t *cu_seqlens_q, *cu_seqlens_k;
  std::int64_t keys;
  // Deterministic dQ (null: not): a counter for each consumer's part of each (batch, head)'s query
  // tiles, zeroed, of the key blocks that have added theirs; query_tiles a (batch, head).
  unsigned* dq_order;
  int query_tiles;
  // Deterministic with every block seeing every tile: key block n starts its walk at tile
  // n dq_stagger (the kernel's comment on dQ's order); 0: at the first.
  int dq_stagger;
};

// kVarlen: a variable-length batch (blockIdx.z the sequence, positions aligned at its end).
// kDeterministic: dQ added in a fixed order (p.dq_order); an instance of its own, so that the default
// one carries none of its code.
template <typename T, int kHeadDim, bool kVarlen, bool kDeterministic>
__global__ void __launch_bounds__(BackwardLayout<kHeadDim>::kThreads, 1)
    attention_backward_wgmma_kernel(const __grid_constant__ CUtensorMap q_map,
                                    const __grid_constant__ CUtensorMap k_map,
                                    const __grid_constant__ CUtensorMap v_map,
                                    const __grid_constant__ CUtensorMap do_map,
                                    const __grid_constant__ CUtensorMap dq_map,
                                    const __grid_constant__ CUtensorMap dk_map,
                                    const __grid_constant__ CUtensorMap dv_map, T* __restrict__ dk_out,
                                    T* __restrict__ dv_out, const BackwardParams p) {
#if CUDALAB_SM90A_DEVICE
  using L = BackwardLayout<kHeadDim>;
  extern __shared__ std::uint8_t dynamic_shared[];
  const std::uint32_t base = aligned_shared_base(dynamic_shared);
  std::uint8_t* shared_bytes = dynamic_shared + (base - shared_address(dynamic_shared));
  const auto* stats = reinterpret_cast<const float*>(shared_bytes + L::kStats);
  const std::uint32_t kv_full = base + L::kKvFull;
  const typename L::Pipeline pipeline(base + L::kQ, base + L::kSlotBarriers);

  // Blocks start in launch order (x fastest), read here as chunks of p.chunk_pairs (kv head,
  // batch) pairs with the key block slowest inside a chunk: under a causal mask the first key blocks
  // see the most query tiles, so each chunk's longest blocks start first and its short ones fill in
  // behind them. With grouped heads a block walks every query head of its group, so its first key
  // blocks are nearly an SM's even share: one chunk of every pair (on an H200, 1.43x at 4 x 16 (4 kv
  // heads) x 2048 x 128). Without groups, about two waves' worth of pairs, so that the blocks of one
  // head still run close together and share its Q and dO tiles in L2 (one chunk of every pair cost
  // 7% at 8 x 16 x 1024 x 128; two waves' worth gained 3-8% at seq 1024-4096, head_dim 128). Without
  // a mask the blocks are equal and a chunk is one pair: the launch order as it stands. A
  // deterministic call takes each chunk's key blocks from the last: the order it adds dQ in (below).
  const std::int64_t linear = blockIdx.x + static_cast<std::int64_t>(gridDim.x) *
                                               (blockIdx.y + static_cast<std::int64_t>(gridDim.y) * blockIdx.z);
  const std::int64_t pairs = static_cast<std::int64_t>(gridDim.y) * gridDim.z, blocks = gridDim.x;
  const std::int64_t chunk = linear / (p.chunk_pairs * blocks), first_pair = chunk * p.chunk_pairs;
  const std::int64_t width = p.chunk_pairs < pairs - first_pair ? p.chunk_pairs : pairs - first_pair;
  const std::int64_t in_chunk = linear - first_pair * blocks;
  const std::int64_t pair = first_pair + in_chunk % width;
  const int key_block = static_cast<int>(kDeterministic ? blocks - 1 - in_chunk / width : in_chunk / width);
  const int kv_head = static_cast<int>(pair % gridDim.y), batch = static_cast<int>(pair / gridDim.y);
  const int key0 = key_block * L::kBlockN;
  const int group = p.heads / p.kv_heads;
  // The block's sequence: its first query and key rows, its lengths, and the shift from a query row
  // to its position (keys - queries: 0 unless variable-length, whose sequences lie along the rows
  // of batch 0).
  int q_begin = 0, k_begin = 0, queries = static_cast<int>(p.seq), keys = queries, shift = 0, tma_batch = batch;
  // The query tiles that see some of the block's keys: none before its first key when causal, none
  // outside a sliding window.
  int first_tile = 0, tiles_per_head = 0;
  if constexpr (kVarlen) {
    const PackedRows q_rows = packed_rows(p.cu_seqlens_q, batch, p.seq);
    const PackedRows k_rows = packed_rows(p.cu_seqlens_k, batch, p.keys);
    if (key0 >= k_rows.count) return;  // past this sequence's keys: the whole block leaves
    q_begin = static_cast<int>(q_rows.begin), queries = static_cast<int>(q_rows.count);
    k_begin = static_cast<int>(k_rows.begin), keys = static_cast<int>(k_rows.count);
    shift = keys - queries, tma_batch = 0;
    // The rows whose positions (row + shift) see a key of the block, held to the sequence's rows.
    const std::int64_t first_row = max(std::int64_t{0}, std::int64_t{key0} - p.window.right - shift);
    const std::int64_t row_end = min(std::int64_t{queries}, std::int64_t{key0} + L::kBlockN + p.window.left - shift);
    first_tile = static_cast<int>(first_row / L::kBlockM);
    tiles_per_head =
        row_end > first_row ? static_cast<int>(ceil_div<std::int64_t>(row_end, L::kBlockM)) - first_tile : 0;
  } else {
    first_tile = static_cast<int>(p.window.first_query(key0) / L::kBlockM);
    tiles_per_head =
        static_cast<int>(ceil_div<std::int64_t>(p.window.query_end(key0 + L::kBlockN - 1, queries), L::kBlockM)) -
        first_tile;
  }
  const int steps = group * tiles_per_head;
  const int out_batch = kVarlen ? 0 : batch;

  const auto head_of = [&](int step) { return kv_head * group + step / tiles_per_head; };
  const auto matrix_of = [&](int step) { return out_batch * p.heads + head_of(step); };
  // Staggered, key block n starts at tile n dq_stagger and wraps round.
  const int rotation = kDeterministic ? key_block * p.dq_stagger : 0;
  const auto tile_of = [&](int step) {
    const int tile = step % tiles_per_head;
    if constexpr (!kDeterministic) return tile;
    return tile + rotation < tiles_per_head ? tile + rotation : tile + rotation - tiles_per_head;
  };
  const auto row_of = [&](int step) { return (first_tile + tile_of(step)) * L::kBlockM; };

  // A slot's full barrier completes on warp 0's TMA bytes (lane 0's expect_tx) and its 32 lanes'
  // statistics copies; its empty barrier on an arrival of every consumer thread, each after its own
  // last read of the slot's statistics (one thread a consumer, after the consumer's barrier, is as
  // safe, but racecheck sees only the direct order).
  if (threadIdx.x == 0) {
    mbarrier_init(kv_full, 1);
    for (int slot = 0; slot < L::kSlots; ++slot) {
      mbarrier_init(pipeline.full_barrier(slot), 1 + 32);
      mbarrier_init(pipeline.empty_barrier(slot), 128 * L::kConsumers);
    }
    fence_barrier_init();
  }
  __syncthreads();
  const int warpgroup = static_cast<int>(threadIdx.x) / 128, warp = static_cast<int>(threadIdx.x) % 128 / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  // Where the block's rows of dK and dV start.
  const auto dk_rows = [&](int first_key) {
    return dk_out + out_batch * p.dk.batch + kv_head * p.dk.head + first_key * p.dk.row;
  };
  const auto dv_rows = [&](int first_key) {
    return dv_out + out_batch * p.dv.batch + kv_head * p.dv.head + first_key * p.dv.row;
  };
  if constexpr (kVarlen) {
    // Keys no query sees (a sequence without queries, or a window that leaves them out): dK = dV = 0.
    if (steps == 0) {
      if (warpgroup > 0) {
        float zeros[kHeadDim / 2] = {};
        store_key_gradients<T, kHeadDim>(zeros, zeros, dk_rows(k_begin), p.dk.row, dv_rows(k_begin), p.dv.row,
                                         key0 + 64 * (warpgroup - 1) + 16 * warp + lane / 4, keys, p.scale, lane % 4,
                                         p.head_dim);
      }
      return;
    }
  }

  if (warpgroup == 0) {
    setmaxnreg_dec<24>();
    if (warp == 0) {
      if (lane == 0) {
        mbarrier_arrive_expect_tx(kv_full, 2 * L::kKvTileBytes);
#pragma unroll
        for (int b = 0; b < L::kBoxes; ++b) {
          tma_load(base + L::kK + b * L::kKvBoxBytes, &k_map, kv_full, kBlockK * b, k_begin + key0, kv_head, tma_batch);
          tma_load(base + L::kV + b * L::kKvBoxBytes, &v_map, kv_full, kBlockK * b, k_begin + key0, kv_head, tma_batch);
        }
      }
      // Each tile's Q and dO by TMA, and its rows' L and D (zero past seq) by cp.async that
      // completes on the same barrier, so no consumer thread waits for a global load.
      for (int step = 0; step < steps; ++step) {
        const RingPosition<L::kSlots> at = RingPosition<L::kSlots>::at(step);
        const int head = head_of(step), q0 = row_of(step);
        mbarrier_wait(pipeline.empty_barrier(at.stage), at.phase ^ 1);
        const std::uint32_t full = pipeline.full_barrier(at.stage);
        if (lane == 0) {
          mbarrier_arrive_expect_tx(full, 2 * L::kQTileBytes);
#pragma unroll
          for (int b = 0; b < L::kBoxes; ++b) {
            tma_load(pipeline.slot(at.stage) + b * L::kQBoxBytes, &q_map, full, kBlockK * b, q_begin + q0, head,
                     tma_batch);
            tma_load(base + L::kDo + at.stage * L::kQTileBytes + b * L::kQBoxBytes, &do_map, full, kBlockK * b,
                     q_begin + q0, head, tma_batch);
          }
        }
        // The tile's first row of L and D: rows of p.seq a (batch, head), the sequence's own in a
        // variable-length batch.
        const std::int64_t rows = static_cast<std::int64_t>(matrix_of(step)) * (kVarlen ? p.seq : queries) + q_begin;
#pragma unroll
        for (int j = 0; j < L::kStatsFloats / 32; ++j) {
          const int i = lane + 32 * j, row = q0 + i % L::kBlockM;
          const float* source = (i < L::kBlockM ? p.lse : p.delta) + rows + row;
          const bool inside = row < queries;
          cp_async4(base + L::kStats + 4 * (at.stage * L::kStatsFloats + i), inside ? source : p.lse, inside ? 4 : 0);
        }
        cp_async_arrive_noinc(full);
      }
    } else if (warp <= L::kConsumers) {
      // Consumer warp - 1's dQ tiles, each added to the accumulator once the consumer has stored it;
      // the tile is free again once the reduction has read it.
      const int consumer = warp - 1;
      const std::uint32_t dq_tile = base + L::kDq + consumer * L::kDqGroupBytes;
      // Head_dim 128: the consumer's 64 dimensions of the tile's rows; 64: every dimension of its 64 rows.
      const int dim0 = kHeadDim == 128 ? 64 * consumer : 0, row0 = kHeadDim == 128 ? 0 : 64 * consumer;
      named_barrier_arrive(kDqEmpty + consumer, kDqHandOverThreads);
      named_barrier_sync(kDqFull + consumer, kDqHandOverThreads);  // the consumer's first step: no tile yet
#pragma unroll 1
      for (int step = 0; step < steps; ++step) {
        // Deterministic: the key blocks that see a tile add their parts one at a time in a fixed
        // order, each once the counter shows those before it. Under a mask, from the last key block
        // down: the order they reach the tile in, each walking its tiles from its diagonal up (in
        // key order a causal call took 1.43x the default order's time, in this order 1.07x;
        // measured). Key blocks past `last` do not see the tile; those up to it all do, and start
        // earlier (the deterministic launch's order), so the wait always ends. Without a mask
        // every block would reach a tile at the same step and wait for all the others there;
        // staggered, they reach it in turn, and the order is that of their arrival: a block's turn
        // is the count of blocks that reach the tile at an earlier step of their walks. A block
        // late in its walk may wait for one that starts after it, so the host staggers only when a
        // (kv head, batch)'s blocks all fit on the GPU at once.
        unsigned turn = 0;
        if (kDeterministic && p.dq_stagger > 0) {
          const int tile = tile_of(step), arrival = step % tiles_per_head;
          int earlier = 0;
          for (int other = lane; other < static_cast<int>(blocks); other += 32) {
            int at = tile - other * p.dq_stagger;
            if (at < 0) at += tiles_per_head;
            earlier += at < arrival;
          }
          turn = static_cast<unsigned>(__reduce_add_sync(0xffffffffu, static_cast<unsigned>(earlier)));
        }
        named_barrier_sync(kDqFull + consumer, kDqHandOverThreads);
        if (lane == 0) {
          const int z = matrix_of(step), q0 = row_of(step);
          [[maybe_unused]] unsigned* order = nullptr;
          if constexpr (kDeterministic) {
            order = p.dq_order + (static_cast<std::int64_t>(z) * p.query_tiles + q0 / L::kBlockM) * 2 + consumer;
            if (p.dq_stagger == 0) {
              const auto last =
                  static_cast<unsigned>((p.window.key_end(q0 + L::kBlockM - 1, queries) - 1) / L::kBlockN);
              turn = last - static_cast<unsigned>(key_block);
            }
            while (read_flag(order) != turn) __nanosleep(32);
          }
#pragma unroll
          for (int b = 0; b < 2; ++b)
            tma_reduce_add(&dq_map, dq_tile + b * L::kDqBoxBytes, dim0 + 32 * b, q_begin + q0 + row0, z);
          bulk_commit();
          if constexpr (kDeterministic) {
            bulk_wait_all();  // the additions done, not only read from shared memory
            raise_flag(order);
          } else {
            bulk_wait_read<0>();
          }
        }
        __syncwarp();
        if (step + 1 < steps) named_barrier_arrive(kDqEmpty + consumer, kDqHandOverThreads);
      }
      if (lane == 0) bulk_wait_all();  // the reductions are done before the block's shared memory goes
    }
    return;
  }

  setmaxnreg_inc<240>();
  const int consumer = warpgroup - 1;
  const int quad = lane % 4;
  // This thread's keys (accumulator rows) are key_g and key_g + 8 of the consumer's 64.
  const int key_in_group = 16 * warp + lane / 4;
  const int key_g = key0 + 64 * consumer + key_in_group;
  // The consumer's 64 keys start 64 rows into each box of K and V for consumer 1.
  const std::uint32_t k_rows = base + L::kK + consumer * 64 * kRowBytes;
  const std::uint32_t v_rows = base + L::kV + consumer * 64 * kRowBytes;
  const float exponent_scale = p.scale * kLog2e;
  float dk[kHeadDim / 2], dv[kHeadDim / 2];
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) dk[i] = dv[i] = 0.0f;
  // P^T and dS^T packed as the RS form's A: dS^T outlives its step, read by dK's product, which is
  // left in flight over the step's end (retired by the next step's first wait).
  std::uint32_t pf[L::kScoreRegisters / 2], dsf[L::kScoreRegisters / 2] = {};
  mbarrier_wait(kv_full, 0);

  // A do-while: every block has a tile (each key is seen by its own query at least), and with a
  // loop that might not run, ptxas serialized every wgmma at head_dim 64 (C7515: the zero-trip
  // path defines the accumulators outside a wgmma).
  int step = 0;
  do {
    const RingPosition<L::kSlots> at = RingPosition<L::kSlots>::at(step);  // this step's Q and dO slot
    const int slot = at.stage, q0 = row_of(step);
    const std::uint32_t q_tile = pipeline.slot(slot);
    const std::uint32_t do_tile = base + L::kDo + slot * L::kQTileBytes;
    const std::uint32_t ds_tile = base + L::kDs + (step % 2) * L::kDsTileBytes;
    const float* row_lse = stats + slot * L::kStatsFloats;
    const float* row_delta = row_lse + L::kBlockM;
    pipeline.consumer_wait(at);

    // S^T and dP^T: k-step kk lies in box kk / 4 of every tile, 32 bytes into its rows.
    float s[L::kScoreRegisters], dp[L::kScoreRegisters];
    wgmma_fence();
    wgmma_ss_m64k16<T, false>(s, k_major_descriptor(k_rows, 0), k_major_descriptor(q_tile, 0));
#pragma unroll
    for (int kk = 1; kk < kHeadDim / 16; ++kk)
      wgmma_ss_m64k16<T, true>(s, k_major_descriptor(k_rows + (kk / 4) * L::kKvBoxBytes, kk % 4),
                               k_major_descriptor(q_tile + (kk / 4) * L::kQBoxBytes, kk % 4));
    wgmma_commit();
    wgmma_ss_m64k16<T, false>(dp, k_major_descriptor(v_rows, 0), k_major_descriptor(do_tile, 0));
#pragma unroll
    for (int kk = 1; kk < kHeadDim / 16; ++kk)
      wgmma_ss_m64k16<T, true>(dp, k_major_descriptor(v_rows + (kk / 4) * L::kKvBoxBytes, kk % 4),
                               k_major_descriptor(do_tile + (kk / 4) * L::kQBoxBytes, kk % 4));
    wgmma_commit();
    // The last step's dQ tile goes to the producer warp here rather than right after its stores:
    // the proxy fence waits until they have landed, which by now they have (at the first step there
    // is no tile, and the producer warp waits once more before its loop).
    fence_async_shared();
    named_barrier_arrive(kDqFull + consumer, kDqHandOverThreads);

    // Register 4i + 2r + e: key key_g + 8r, query q0 + 8i + 2 quad + e. Keys and queries past seq,
    // and keys outside the query's window (after it when causal), get P = 0 (TMA's zero rows would
    // give exp(-L) there). P^T is computed while dP^T is still in flight. Indices are 32-bit (the
    // limits keep seq < 2^31). Tiles inside the sequence whose every query sees every key skip the
    // mask.
    const SharedRowValues lse{row_lse, quad, kLog2e};
    wgmma_wait<1>();  // S^T, and the last step's dK: its slot goes back to the producer
    fence_accumulators(s);
    fence_accumulators(dk);
    fence_registers(dsf);
    if (step > 0) pipeline.consumer_release(RingPosition<L::kSlots>::at(step - 1).stage);
    // In positions (row + shift), the queries end where the keys do: one limit for both, as a dense
    // batch's seq (a limit for each spilled 280 bytes at head_dim 64, ptxas).
    const int keys_end = keys, position0 = q0 + shift;
    const bool interior = key0 + L::kBlockN <= keys_end && position0 + L::kBlockM <= keys_end &&
                          p.window.sees(position0, key0 + L::kBlockN - 1) &&
                          p.window.sees(position0 + L::kBlockM - 1, key0);
    if (interior) {
      backward_probabilities<false>(s, key_g, position0, keys_end, p.window, quad, lse, exponent_scale);
    } else {
      backward_probabilities<true>(s, key_g, position0, keys_end, p.window, quad, lse, exponent_scale);
    }
    // D of the rows: for 64-row tiles into registers while dP^T runs (loaded after the wait, each
    // subtraction waited on shared-memory latency); 128-row tiles have no registers to spare for it.
    const SharedRowValues delta_rows{row_delta, quad, 1.0f};
    if constexpr (L::kBlockM == 64) {
      RegisterRowValues<8> delta;
      delta.load(delta_rows);
      wgmma_wait<0>();
      fence_accumulators(dp);
      score_gradients(dp, s, delta);
    } else {
      wgmma_wait<0>();
      fence_accumulators(dp);
      score_gradients(dp, s, delta_rows);
    }
    // The RS form's A for k-step kk (queries 16 kk ..) is registers 8 kk .. 8 kk + 7 in pairs.
    pack_fragment<T>(pf, s);
    pack_fragment<T>(dsf, dp);
    // dS (query rows, keys along k) into box `consumer` of this step's dS tile, swizzled as TMA
    // would, by stmatrix.trans from dS^T's packed fragments: call a stores matrices j = 0..3,
    // queries 8 (2a + j / 2) .., keys 16 warp + 8 (j % 2) .., which are dsf[4a + j]. 4 instructions
    // where 2-byte stores took 32. The tile was last read by the dQ products of two steps ago: this
    // consumer's own has retired, and (head_dim 128) its partner's retired before it met this one at
    // the last step's barrier.
#pragma unroll
    for (int a = 0; a < L::kBlockM / 16; ++a) {
      const int matrix = lane / 8, query = 8 * (2 * a + matrix / 2) + lane % 8, chunk = 2 * warp + matrix % 2;
      const std::uint32_t fragments[4] = {dsf[4 * a], dsf[4 * a + 1], dsf[4 * a + 2], dsf[4 * a + 3]};
      stmatrix_x4_trans(ds_tile + consumer * L::kDsBoxBytes + query * kRowBytes + ((chunk ^ (query % 8)) * 16),
                        fragments);
    }
    fence_registers(pf);
    fence_registers(dsf);
    fence_accumulators(dv);
    fence_accumulators(dk);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < L::kBlockM / 16; ++kk) {
      const std::uint32_t a[4] = {pf[4 * kk], pf[4 * kk + 1], pf[4 * kk + 2], pf[4 * kk + 3]};
      wgmma_rs_m64k16<T>(dv, a, descriptor(do_tile + 16 * kRowBytes * kk, L::kQBoxBytes, kAtomBytes));
    }
    wgmma_commit();
    // dQ reads both consumers' halves of dS. The stores' proxy fence comes after dV's products are
    // issued (they do not read dS), so that its wait for the stores overlaps them.
    fence_async_shared();
    named_barrier_sync(kDsStored, 256);

    // dQ over all 128 keys: head_dim 128 -> this consumer's 64 dimensions (box `consumer` of K) of
    // the tile's 64 rows; 64 -> every dimension of the consumer's 64 of the tile's 128 rows. The A
    // operand's k-step kk lies in box kk / 4 of the dS tile, B's in rows 16 kk .. of K.
    constexpr int kKeySteps = L::kBlockN / 16;
    const std::uint32_t ds_rows = ds_tile + (kHeadDim == 128 ? 0 : consumer * 64 * kRowBytes);
    const std::uint32_t k_box = base + L::kK + (kHeadDim == 128 ? consumer * L::kKvBoxBytes : 0);
    float dq[32];
    wgmma_fence();
    wgmma_ss_m64n64k16<T, false, true>(dq, k_major_descriptor(ds_rows, 0),
                                       descriptor(k_box, L::kKvBoxBytes, kAtomBytes));
#pragma unroll
    for (int kk = 1; kk < kKeySteps; ++kk)
      wgmma_ss_m64n64k16<T, true, true>(dq, k_major_descriptor(ds_rows + (kk / 4) * L::kDsBoxBytes, kk % 4),
                                        descriptor(k_box + 16 * kRowBytes * kk, L::kKvBoxBytes, kAtomBytes));
    wgmma_commit();
    // dK after dQ, so that the tensor cores run it while dQ goes out and the next step starts.
#pragma unroll
    for (int kk = 0; kk < L::kBlockM / 16; ++kk) {
      const std::uint32_t a[4] = {dsf[4 * kk], dsf[4 * kk + 1], dsf[4 * kk + 2], dsf[4 * kk + 3]};
      wgmma_rs_m64k16<T>(dk, a, descriptor(q_tile + 16 * kRowBytes * kk, L::kQBoxBytes, kAtomBytes));
    }
    wgmma_commit();
    wgmma_wait<1>();  // dV and dQ
    fence_accumulators(dq);
    fence_accumulators(dv);
    fence_registers(pf);
    // Register 4i + 2r + e: query row 16 warp + lane / 4 + 8r of the tile, dimension 8i + 2 quad + e
    // of the consumer's 64. They go to the consumer's fp32 tile as two TMA boxes of 32 dimensions
    // (128-byte rows, 16-byte chunk j of row r at j ^ (r % 8): a warp's float2 stores take the
    // minimum two wavefronts), which its producer warp adds to the accumulator in L2: no atomics
    // from the consumers, and the rows past seq are left alone by TMA.
    named_barrier_sync(kDqEmpty + consumer, kDqHandOverThreads);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = 16 * warp + lane / 4 + 8 * r;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const std::uint32_t at = L::kDq + consumer * L::kDqGroupBytes + (i / 4) * L::kDqBoxBytes + row * kRowBytes +
                                 (((2 * (i % 4) + quad / 2) ^ (row % 8)) * 16) + (quad % 2) * 8;
        *reinterpret_cast<float2*>(shared_bytes + at) = make_float2(dq[4 * i + 2 * r], dq[4 * i + 2 * r + 1]);
      }
    }
    if constexpr (kHeadDim == 64) {
      // dK retired here: 128-row tiles leave no registers for dS^T to live into the next tile's
      // products.
      wgmma_wait<0>();
      fence_accumulators(dk);
      fence_registers(dsf);
    }
  } while (++step < steps);
  fence_async_shared();
  named_barrier_arrive(kDqFull + consumer, kDqHandOverThreads);  // the last step's dQ tile

  wgmma_wait<0>();
  fence_accumulators(dk);
  fence_registers(dsf);
  // dK (scaled) and dV: register 4i + 2r + e is key key_g + 8r, dimension 8i + 2 quad + e. In a
  // dense batch through shared memory by TMA stores: each consumer's rows of K and V, free once both
  // consumers' last dQ products (which read all 128 keys of K) are done, take its dK and dV (the
  // same 128-byte swizzled boxes); TMA leaves out the keys past the sequence. A variable-length
  // batch's sequences lie along one tensor's rows (a box past a short one's end would overwrite the
  // next one's): from registers.
  if constexpr (kVarlen) {
    store_key_gradients<T, kHeadDim>(dk, dv, dk_rows(k_begin), p.dk.row, dv_rows(k_begin), p.dv.row, key_g, keys,
                                     p.scale, quad, p.head_dim);
  } else {
    named_barrier_sync(kKeysRead, 128 * L::kConsumers);
    std::uint32_t dk_pairs[2][kHeadDim / 8], dv_pairs[2][kHeadDim / 8];
    key_gradient_pairs<T, kHeadDim, true>(dk, dv, key_g, keys, p.scale,
                                          [&](int r, int i, std::uint32_t dk_pair, std::uint32_t dv_pair) {
                                            dk_pairs[r][i] = dk_pair;
                                            dv_pairs[r][i] = dv_pair;
                                          });
    stmatrix_swizzled_rows(dk_pairs, k_rows, L::kKvBoxBytes, 16 * warp, lane);  // the warp's 16 of the 64 keys
    stmatrix_swizzled_rows(dv_pairs, v_rows, L::kKvBoxBytes, 16 * warp, lane);
    fence_async_shared();
    named_barrier_sync(kGradientsStaged + consumer, 128);
    if (threadIdx.x % 128 == 0) {
#pragma unroll
      for (int b = 0; b < L::kBoxes; ++b) {
        tma_store(&dk_map, k_rows + b * L::kKvBoxBytes, kBlockK * b, key0 + 64 * consumer, kv_head, batch);
        tma_store(&dv_map, v_rows + b * L::kKvBoxBytes, kBlockK * b, key0 + 64 * consumer, kv_head, batch);
      }
      bulk_commit();
      bulk_wait_all();
    }
  }
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

// The block order's chunk (the kernel's comment): one pair when dQ's order is staggered (a pair's
// blocks wait for each other); else every pair with grouped heads; else, under a causal mask, the
// pairs of about two waves of blocks, and one pair without one.
template <typename T>
std::int64_t chunk_pairs(const AttentionBackwardArgs<T>& args, std::int64_t batches, std::int64_t key_blocks,
                         int dq_stagger) {
  const std::int64_t pairs = args.kv_heads * batches;
  if (dq_stagger > 0) return 1;
  if (args.heads != args.kv_heads) return pairs;
  if (!args.causal) return 1;
  return std::clamp<std::int64_t>(ceil_div<std::int64_t>(2 * current_gpu().sm_count, key_blocks), 1, pairs);
}

template <typename T, int kHeadDim, bool kVarlen, bool kDeterministic>
void launch_backward_wgmma(const AttentionBackwardArgs<T>& args, float* delta, float* dq_accumulator,
                           unsigned* dq_order, cudaStream_t stream) {
  using L = BackwardLayout<kHeadDim>;
  const VarlenRows& varlen = args.varlen;
  const std::int64_t zq = args.batch * args.heads, matrix = args.seq * kHeadDim, keys = key_rows(args);
  const CUtensorMap q_map = head_tensor_map(args.q, args.layout.q, args, args.heads, args.seq, L::kBlockM);
  const CUtensorMap do_map = head_tensor_map(args.d_o, args.layout.d_o, args, args.heads, args.seq, L::kBlockM);
  const std::int64_t key_map_rows = std::max<std::int64_t>(keys, 1);  // a batch without keys reads none
  const CUtensorMap k_map = head_tensor_map(args.k, args.layout.k, args, args.kv_heads, key_map_rows, L::kBlockN);
  const CUtensorMap v_map = head_tensor_map(args.v, args.layout.v, args, args.kv_heads, key_map_rows, L::kBlockN);
  // A variable-length batch's window is about positions up to the longest sequence's.
  const KeyWindow window = key_window(kVarlen ? varlen.max_seqlen_q + varlen.max_seqlen_k : args.seq, args.causal,
                                      args.window_left, args.window_right);
  const std::int64_t key_blocks = ceil_div<std::int64_t>(kVarlen ? varlen.max_seqlen_k : args.seq, L::kBlockN);
  const std::int64_t batches = kVarlen ? varlen.sequences : args.batch;
  const std::int64_t query_tiles = ceil_div<std::int64_t>(args.seq, L::kBlockM);
  // Staggered dQ order: deterministic, every block seeing every query tile, and a pair's key blocks
  // (which wait for each other) all on the GPU at once, one block an SM. The starts spread evenly.
  const bool staggered = kDeterministic && !kVarlen && !args.causal && !window_binds(args) &&
                         key_blocks <= current_gpu().sm_count && key_blocks <= query_tiles;
  const int dq_stagger = staggered ? static_cast<int>(query_tiles / key_blocks) : 0;
  // dQ's fp32 accumulator is dense whatever dQ's layout, kHeadDim columns (fused_backward's rows):
  // {column, row, matrix}.
  const CUtensorMap dq_map = make_tensor_map(dq_accumulator, args.seq, kHeadDim, kHeadDim, zq, matrix, L::kDqRows);
  // dK's and dV's rows by TMA stores, 64 keys a box, in a dense batch (a variable-length one stores
  // them from registers).
  CUtensorMap dk_map{}, dv_map{};
  if constexpr (!kVarlen) {
    dk_map = head_tensor_map(args.dk, args.layout.dk, args, args.kv_heads, keys, 64);
    dv_map = head_tensor_map(args.dv, args.layout.dv, args, args.kv_heads, keys, 64);
  }
  const BackwardParams params{args.lse,
                              delta,
                              resolved(args.layout.dk, args.kv_heads, keys, args.head_dim),
                              resolved(args.layout.dv, args.kv_heads, keys, args.head_dim),
                              args.seq,
                              static_cast<int>(args.heads),
                              static_cast<int>(args.kv_heads),
                              static_cast<int>(args.head_dim),
                              args.scale,
                              {static_cast<int>(window.left), static_cast<int>(window.right)},
                              chunk_pairs(args, batches, key_blocks, dq_stagger),
                              varlen.cu_seqlens_q,
                              varlen.cu_seqlens_k,
                              keys,
                              dq_order,
                              static_cast<int>(query_tiles),
                              dq_stagger};
  auto* kernel = attention_backward_wgmma_kernel<T, kHeadDim, kVarlen, kDeterministic>;
  set_shared_memory(kernel, L::kSharedBytes);
  const dim3 grid(static_cast<unsigned>(key_blocks), static_cast<unsigned>(args.kv_heads),
                  static_cast<unsigned>(batches));
  kernel<<<grid, L::kThreads, L::kSharedBytes, stream>>>(q_map, k_map, v_map, do_map, dq_map, dk_map, dv_map, args.dk,
                                                         args.dv, params);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace
#endif  // CUDALAB_SM90A

std::string wgmma_backward_limits(const AttentionShape& shape) {
  const std::string why = wgmma_limits(shape);
  if (!why.empty()) return why;
  if (shape.head_dim > 128)
    return "head_dim " + std::to_string(shape.head_dim) +
           ": the backward kernel takes multiples of 8 up to 128 (on its head_dim 64 and 128 builds)";
  if (shape.kv_heads > 65535) return "kv_heads above 65535 (grid y)";
  return "";
}

template <typename T>
void wgmma_backward(const AttentionBackwardArgs<T>& args, cudaStream_t stream) {
  fused_backward::run(
      "attention backward wgmma", wgmma_backward_limits(shape_of(args, current_gpu().compute_capability)), args, stream,
      [&](float* delta, float* dq_accumulator, unsigned* dq_order) {
#if CUDALAB_SM90A
        if (args.varlen.on() && (args.varlen.sequences == 0 || args.varlen.max_seqlen_k == 0)) return;
        // A variable-length batch is never deterministic (attention.cu refuses it).
        const auto launch = [&](auto head_dim) {
          constexpr int kHeadDim = decltype(head_dim)::value;
          if (args.varlen.on())
            return launch_backward_wgmma<T, kHeadDim, true, false>(args, delta, dq_accumulator, dq_order, stream);
          if (dq_order != nullptr)
            return launch_backward_wgmma<T, kHeadDim, false, true>(args, delta, dq_accumulator, dq_order, stream);
          launch_backward_wgmma<T, kHeadDim, false, false>(args, delta, dq_accumulator, dq_order, stream);
        };
        // A head_dim below 64 or 128 runs on that build (TMA reads zeros past its last dimension),
        // the width fused_backward gave dQ's accumulator rows.
        if (dq_accumulator_columns(args.head_dim) == 64) return launch(std::integral_constant<int, 64>{});
        launch(std::integral_constant<int, 128>{});
#else
        (void)delta;  // not reached: the limits say the rung was not built
        (void)dq_accumulator;
        (void)dq_order;
#endif
      });
}

template void wgmma_backward<__nv_bfloat16>(const AttentionBackwardArgs<__nv_bfloat16>&, cudaStream_t);
template void wgmma_backward<__half>(const AttentionBackwardArgs<__half>&, cudaStream_t);

}  // namespace cudalab::attention_variants
