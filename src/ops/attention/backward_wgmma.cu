// Backward rung `wgmma`: FlashAttention-2's backward (the `mma` rung's algorithm) on Hopper's
// warpgroup instructions, sm_90a only. A block of two warpgroups owns 128 keys of one (batch, kv
// head), 64 per warpgroup, and walks 64-row query tiles of every query head of the group. Per tile,
// each warpgroup:
//   S^T = K Q^T, dP^T = V dO^T   wgmma m64n64 from shared memory (keys as rows, so P^T and dS^T come
//                                out in the accumulator layout that the RS form takes as A);
//   P^T, dS^T                    exp2 with the scale folded in, L and D of the tile's rows from
//                                shared memory, rounded to T in registers (P^T while dP^T runs);
//   dV += P^T dO, dK += dS^T Q   wgmma RS, dO and Q read MN-major (the forward's P V layout);
//   dQ += dS K                   dS^T goes to shared memory transposed (dS, K-major), then each
//                                warpgroup multiplies it by K for half of the dimensions (head_dim
//                                128) or by its own 64 keys (head_dim 64); the fp32 result goes to
//                                shared memory and one thread adds it to dQ's accumulator in L2 with
//                                a TMA bulk reduction (cp.reduce.async.bulk .add), FA3's way.
// Thread 0 issues TMA loads of the next tile's Q and dO into a slot of a 3-slot ring while the
// current tile is computed, and dK's product runs on the tensor cores while dQ goes out (the third
// slot keeps the next load away from the tile dK may still read). Fixes, relative to `mma`: no
// ldmatrix traffic or fragment registers for shared operands (the mma rung's shared-memory reads,
// 256-384 bytes per mma.sync against the SM's 128 a clock, bounded it), the next tile's copy
// overlapped, dQ added once per 128 keys by bulk reductions instead of a thread's atomics per 64
// (measured against float2 atomics from registers: +4% at head_dim 128, +19% at 64). Costs: 211
// KiB of shared memory at head_dim 128 (one block per SM), two block barriers a tile that keep the
// warpgroups in step, no warp specialization.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/fast_math.cuh"
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
  static constexpr int kThreads = 256;  // two warpgroups
  static constexpr int kBlockN = 128;   // keys per block, 64 per warpgroup
  static constexpr int kBlockM = 64;    // query rows per tile
  static constexpr int kSlots = 3;      // Q and dO slots: the step before last's dK may still read its slot
  static constexpr int kBoxes = kHeadDim / kBlockK;
  static constexpr std::uint32_t kKvBoxBytes = kBlockN * kRowBytes;
  static constexpr std::uint32_t kKvTileBytes = kBoxes * kKvBoxBytes;
  static constexpr std::uint32_t kQBoxBytes = kBlockM * kRowBytes;
  static constexpr std::uint32_t kQTileBytes = kBoxes * kQBoxBytes;
  static constexpr std::uint32_t kDsBoxBytes = kBlockM * kRowBytes;  // 64 query rows x 64 keys
  static constexpr std::uint32_t kDqBoxBytes = kBlockM * kRowBytes;  // 64 query rows x 32 fp32 dimensions
  static constexpr std::uint32_t kDqGroupBytes = 2 * kDqBoxBytes;    // a warpgroup's 64 dimensions
  // Shared memory: K, V, the slots of Q and of dO, dS (two boxes of 64 keys), each warpgroup's
  // fp32 dQ tile, the slots of the tile's L and D (64 floats each), then the barriers (K and V; Q
  // slots).
  struct Storage {
    alignas(1024) std::uint8_t k[kKvTileBytes];
    alignas(1024) std::uint8_t v[kKvTileBytes];
    alignas(1024) std::uint8_t q[kSlots][kQTileBytes];
    alignas(1024) std::uint8_t d_o[kSlots][kQTileBytes];
    alignas(1024) std::uint8_t ds[2][kDsBoxBytes];
    alignas(1024) std::uint8_t dq[2][kDqGroupBytes];
    float stats[kSlots][2 * kBlockM];
    std::uint64_t kv_full;
    std::uint64_t q_full[kSlots];
  };
  static constexpr std::uint32_t kK = offsetof(Storage, k), kV = offsetof(Storage, v);
  static constexpr std::uint32_t kQ = offsetof(Storage, q), kDo = offsetof(Storage, d_o);
  static constexpr std::uint32_t kDs = offsetof(Storage, ds), kDq = offsetof(Storage, dq);
  static constexpr std::uint32_t kStats = offsetof(Storage, stats);
  static constexpr std::uint32_t kKvFull = offsetof(Storage, kv_full), kQFull = offsetof(Storage, q_full);
  static constexpr int kSharedBytes = shared_storage_bytes<Storage>();
};

// The named barrier of warpgroup w's dQ hand-over is kDqBarrier + w (0 is __syncthreads).
enum NamedBarrier : int { kDqBarrier = 1 };

struct BackwardParams {
  const float* lse;
  const float* delta;
  AttentionStrides dk, dv;  // where dK's and dV's rows lie (resolved: never the default)
  std::int64_t seq;
  int heads, kv_heads;
  float scale;
  BasicKeyWindow<int> window;  // 32-bit: the limits keep seq below 2^31
  std::int64_t chunk_pairs;    // (kv head, batch) pairs a chunk of the block order (the kernel's comment)
};

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(256, 1)
    attention_backward_wgmma_kernel(const __grid_constant__ CUtensorMap q_map,
                                    const __grid_constant__ CUtensorMap k_map,
                                    const __grid_constant__ CUtensorMap v_map,
                                    const __grid_constant__ CUtensorMap do_map,
                                    const __grid_constant__ CUtensorMap dq_map, T* __restrict__ dk_out,
                                    T* __restrict__ dv_out, const BackwardParams p) {
#if CUDALAB_SM90A_DEVICE
  using L = BackwardLayout<kHeadDim>;
  extern __shared__ std::uint8_t dynamic_shared[];
  const std::uint32_t base = aligned_shared_base(dynamic_shared);
  std::uint8_t* shared_bytes = dynamic_shared + (base - shared_address(dynamic_shared));
  const auto* stats = reinterpret_cast<const float*>(shared_bytes + L::kStats);
  const std::uint32_t kv_full = base + L::kKvFull, q_full = base + L::kQFull;  // slot s: q_full + 8 s

  // Blocks start in launch order (x fastest), read here as chunks of p.chunk_pairs (kv head,
  // batch) pairs with the key block slowest inside a chunk: under a causal mask the first key blocks
  // see the most query tiles, so each chunk's longest blocks start first and its short ones fill in
  // behind them. With grouped heads a block walks every query head of its group, so its first key
  // blocks are nearly an SM's even share: one chunk of every pair (on an H200, 1.43x at 4 x 16 (4 kv
  // heads) x 2048 x 128). Without groups, about two waves' worth of pairs, so that the blocks of one
  // head still run close together and share its Q and dO tiles in L2 (one chunk of every pair cost
  // 7% at 8 x 16 x 1024 x 128; two waves' worth gained 3-8% at seq 1024-4096, head_dim 128). Without
  // a mask the blocks are equal and a chunk is one pair: the launch order as it stands.
  const std::int64_t linear = blockIdx.x + static_cast<std::int64_t>(gridDim.x) *
                                               (blockIdx.y + static_cast<std::int64_t>(gridDim.y) * blockIdx.z);
  const std::int64_t pairs = static_cast<std::int64_t>(gridDim.y) * gridDim.z, blocks = gridDim.x;
  const std::int64_t chunk = linear / (p.chunk_pairs * blocks), first_pair = chunk * p.chunk_pairs;
  const std::int64_t width = p.chunk_pairs < pairs - first_pair ? p.chunk_pairs : pairs - first_pair;
  const std::int64_t in_chunk = linear - first_pair * blocks;
  const std::int64_t pair = first_pair + in_chunk % width;
  const int key_block = static_cast<int>(in_chunk / width);
  const int kv_head = static_cast<int>(pair % gridDim.y), batch = static_cast<int>(pair / gridDim.y);
  const int key0 = key_block * L::kBlockN;
  const int group = p.heads / p.kv_heads;
  const int seq = static_cast<int>(p.seq);
  // The query tiles that see some of the block's keys: none before its first key when causal, none
  // outside a sliding window.
  const int first_tile = static_cast<int>(p.window.first_query(key0) / L::kBlockM);
  const int tiles_per_head =
      static_cast<int>(ceil_div<std::int64_t>(p.window.query_end(key0 + L::kBlockN - 1, seq), L::kBlockM)) - first_tile;
  const int steps = group * tiles_per_head;
  const auto head_of = [&](int step) { return kv_head * group + step / tiles_per_head; };
  const auto matrix_of = [&](int step) { return batch * p.heads + head_of(step); };
  const auto row_of = [&](int step) { return (first_tile + step % tiles_per_head) * L::kBlockM; };

  // A Q slot's barrier completes on thread 0's TMA bytes and on the statistics copies of threads
  // 0-127 (one arrival each).
  constexpr std::uint32_t kStatsThreads = 2 * L::kBlockM;
  if (threadIdx.x == 0) {
    mbarrier_init(kv_full, 1);
    for (int slot = 0; slot < L::kSlots; ++slot) mbarrier_init(q_full + 8 * slot, 1 + kStatsThreads);
    fence_barrier_init();
  }
  __syncthreads();
  // Step `step`'s Q and dO into its slot (thread 0, by TMA), and its rows' L and D (threads 0-127,
  // by 4-byte cp.async, zero past seq). Both complete on the slot's barrier, so no thread waits for
  // a load here (plain loads held threads 0-127, and through the block barriers all, for a global
  // load's latency every step). Thread 0 issues every copy: sharing the tiles' loads between the
  // warpgroups' first threads cost 3-6%.
  const auto load_step = [&](int step) {
    const int slot = RingPosition<L::kSlots>::at(step).stage, head = head_of(step), z = matrix_of(step),
              q0 = row_of(step);
    if (threadIdx.x == 0) {
      const std::uint32_t full = q_full + 8 * slot;
      mbarrier_arrive_expect_tx(full, 2 * L::kQTileBytes);
#pragma unroll
      for (int b = 0; b < L::kBoxes; ++b) {
        tma_load(base + L::kQ + slot * L::kQTileBytes + b * L::kQBoxBytes, &q_map, full, kBlockK * b, q0, head, batch);
        tma_load(base + L::kDo + slot * L::kQTileBytes + b * L::kQBoxBytes, &do_map, full, kBlockK * b, q0, head,
                 batch);
      }
    }
    if (threadIdx.x < kStatsThreads) {
      const int r = static_cast<int>(threadIdx.x) % L::kBlockM;
      const std::int64_t row = q0 + r, at = static_cast<std::int64_t>(z) * seq + row;
      const float* source = threadIdx.x < L::kBlockM ? p.lse : p.delta;
      const bool inside = row < seq;
      cp_async4(base + L::kStats + 4 * (slot * kStatsThreads + threadIdx.x), inside ? source + at : source,
                inside ? 4 : 0);
      cp_async_arrive_noinc(q_full + 8 * slot);
    }
  };
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(kv_full, 2 * L::kKvTileBytes);
#pragma unroll
    for (int b = 0; b < L::kBoxes; ++b) {
      tma_load(base + L::kK + b * L::kKvBoxBytes, &k_map, kv_full, kBlockK * b, key0, kv_head, batch);
      tma_load(base + L::kV + b * L::kKvBoxBytes, &v_map, kv_full, kBlockK * b, key0, kv_head, batch);
    }
  }
  load_step(0);
  __syncthreads();

  const int warpgroup = static_cast<int>(threadIdx.x) / 128, warp = static_cast<int>(threadIdx.x) % 128 / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32, quad = lane % 4;
  const bool dq_leader = threadIdx.x % 128 == 0;  // issues its warpgroup's dQ reductions
  // This thread's keys (accumulator rows) are key_g and key_g + 8 of the warpgroup's 64.
  const int key_in_group = 16 * warp + lane / 4;
  const int key_g = key0 + 64 * warpgroup + key_in_group;
  // The warpgroup's 64 keys start 64 rows into each box of K and V for warpgroup 1.
  const std::uint32_t k_rows = base + L::kK + warpgroup * 64 * kRowBytes;
  const std::uint32_t v_rows = base + L::kV + warpgroup * 64 * kRowBytes;
  const float exponent_scale = p.scale * kLog2e;
  float dk[kHeadDim / 2], dv[kHeadDim / 2];
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) dk[i] = dv[i] = 0.0f;
  // P^T and dS^T packed as the RS form's A: dS^T outlives its step, read by dK's product, which is
  // left in flight over the step's end (retired by the next step's first wait).
  std::uint32_t pf[16], dsf[16] = {};
  mbarrier_wait(kv_full, 0);

  for (int step = 0; step < steps; ++step) {
    const RingPosition<L::kSlots> at = RingPosition<L::kSlots>::at(step);  // this step's Q and dO slot
    const int slot = at.stage, z = matrix_of(step), q0 = row_of(step);
    if (step + 1 < steps) load_step(step + 1);
    const std::uint32_t q_tile = base + L::kQ + slot * L::kQTileBytes;
    const std::uint32_t do_tile = base + L::kDo + slot * L::kQTileBytes;
    const float* row_lse = stats + slot * kStatsThreads;
    const float* row_delta = row_lse + L::kBlockM;
    mbarrier_wait(q_full + 8 * slot, at.phase);

    // S^T and dP^T: k-step kk lies in box kk / 4 of every tile, 32 bytes into its rows.
    float s[32], dp[32];
    wgmma_fence();
    wgmma_ss_m64n64k16<T, false, false>(s, k_major_descriptor(k_rows, 0), k_major_descriptor(q_tile, 0));
#pragma unroll
    for (int kk = 1; kk < kHeadDim / 16; ++kk)
      wgmma_ss_m64n64k16<T, true, false>(s, k_major_descriptor(k_rows + (kk / 4) * L::kKvBoxBytes, kk % 4),
                                         k_major_descriptor(q_tile + (kk / 4) * L::kQBoxBytes, kk % 4));
    wgmma_commit();
    wgmma_ss_m64n64k16<T, false, false>(dp, k_major_descriptor(v_rows, 0), k_major_descriptor(do_tile, 0));
#pragma unroll
    for (int kk = 1; kk < kHeadDim / 16; ++kk)
      wgmma_ss_m64n64k16<T, true, false>(dp, k_major_descriptor(v_rows + (kk / 4) * L::kKvBoxBytes, kk % 4),
                                         k_major_descriptor(do_tile + (kk / 4) * L::kQBoxBytes, kk % 4));
    wgmma_commit();

    // Register 4i + 2r + e: key key_g + 8r, query q0 + 8i + 2 quad + e. Keys and queries past seq,
    // and keys outside the query's window (after it when causal), get P = 0 (TMA's zero rows would
    // give exp(-L) there). P^T is computed while dP^T is still in flight. Indices are 32-bit (the
    // limits keep seq < 2^31). Tiles inside the sequence whose every query sees every key skip the
    // mask.
    const SharedRowValues lse{row_lse, quad, kLog2e};
    wgmma_wait<1>();  // S^T, and the last step's dK
    fence_accumulators(s);
    fence_accumulators(dk);
    fence_registers(dsf);
    const bool interior = key0 + L::kBlockN <= seq && q0 + L::kBlockM <= seq &&
                          p.window.sees(q0, key0 + L::kBlockN - 1) && p.window.sees(q0 + L::kBlockM - 1, key0);
    if (interior) {
      backward_probabilities<false>(s, key_g, q0, seq, p.window, quad, lse, exponent_scale);
    } else {
      backward_probabilities<true>(s, key_g, q0, seq, p.window, quad, lse, exponent_scale);
    }
    // D of the rows into registers while dP^T runs (loaded after the wait, each subtraction waited
    // on shared-memory latency).
    RegisterRowValues<8> delta;
    delta.load(SharedRowValues{row_delta, quad, 1.0f});
    wgmma_wait<0>();
    fence_accumulators(dp);
    score_gradients(dp, s, delta);
    // The RS form's A for k-step kk (queries 16 kk ..) is registers 8 kk .. 8 kk + 7 in pairs.
    pack_fragment<T>(pf, s);
    pack_fragment<T>(dsf, dp);
    // dS (query rows, keys along k) into box `warpgroup` of the dS tile, swizzled as TMA would,
    // by stmatrix.trans from dS^T's packed fragments: call a stores matrices j = 0..3, queries
    // 8 (2a + j / 2) .., keys 16 warp + 8 (j % 2) .., which are dsf[4a + j]. 4 instructions where
    // 2-byte stores took 32. Stored before dV is issued, so that S^T and dP^T are dead while it
    // runs.
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      const int matrix = lane / 8, query = 8 * (2 * a + matrix / 2) + lane % 8, chunk = 2 * warp + matrix % 2;
      const std::uint32_t fragments[4] = {dsf[4 * a], dsf[4 * a + 1], dsf[4 * a + 2], dsf[4 * a + 3]};
      stmatrix_x4_trans(base + L::kDs + warpgroup * L::kDsBoxBytes + query * kRowBytes + ((chunk ^ (query % 8)) * 16),
                        fragments);
    }
    fence_async_shared();  // the generic stores before wgmma's (async proxy) reads
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

    if (dq_leader) bulk_wait_read<0>();  // the last tile's dQ reduction has read this warpgroup's tile
    __syncthreads();

    // dQ: head_dim 128 -> this warpgroup's 64 dimensions (box `warpgroup` of K) over all 128 keys;
    // head_dim 64 -> all 64 dimensions over the warpgroup's own keys (both warpgroups add).
    constexpr int kKeySteps = kHeadDim == 128 ? L::kBlockN / 16 : 64 / 16;
    const int key_step0 = kHeadDim == 128 ? 0 : 4 * warpgroup;
    const std::uint32_t k_box = base + L::kK + (kHeadDim == 128 ? warpgroup * L::kKvBoxBytes : 0);
    float dq[32];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kKeySteps; ++kk) {
      const int ks = key_step0 + kk;
      const std::uint64_t a = k_major_descriptor(base + L::kDs + (ks / 4) * L::kDsBoxBytes, ks % 4);
      const std::uint64_t b = descriptor(k_box + 16 * kRowBytes * ks, L::kKvBoxBytes, kAtomBytes);
      if (kk == 0) {
        wgmma_ss_m64n64k16<T, false, true>(dq, a, b);
      } else {
        wgmma_ss_m64n64k16<T, true, true>(dq, a, b);
      }
    }
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
    // of the warpgroup's 64. They go to the warpgroup's fp32 tile as two TMA boxes of 32 dimensions
    // (128-byte rows, 16-byte chunk j of row r at j ^ (r % 8): a warp's float2 stores take the
    // minimum two wavefronts), which one thread adds to the accumulator in L2 by a bulk reduction:
    // no atomics from the warps, and the rows past seq are left alone by TMA.
    const std::uint32_t dq_tile = base + L::kDq + warpgroup * L::kDqGroupBytes;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = 16 * warp + lane / 4 + 8 * r;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const std::uint32_t at = L::kDq + warpgroup * L::kDqGroupBytes + (i / 4) * L::kDqBoxBytes + row * kRowBytes +
                                 (((2 * (i % 4) + quad / 2) ^ (row % 8)) * 16) + (quad % 2) * 8;
        *reinterpret_cast<float2*>(shared_bytes + at) = make_float2(dq[4 * i + 2 * r], dq[4 * i + 2 * r + 1]);
      }
    }
    fence_async_shared();
    named_barrier_sync(kDqBarrier + warpgroup, 128);
    if (dq_leader) {
      const int dim0 = kHeadDim == 128 ? 64 * warpgroup : 0;
#pragma unroll
      for (int b = 0; b < 2; ++b) tma_reduce_add(&dq_map, dq_tile + b * L::kDqBoxBytes, dim0 + 32 * b, q0, z);
      bulk_commit();
    }
    __syncthreads();  // dS and the statistics are free for the next steps; the slot once dK has run
  }

  wgmma_wait<0>();
  fence_accumulators(dk);
  fence_registers(dsf);
  if (dq_leader) bulk_wait_all();  // the reductions are done before the block's shared memory goes
  // dK (scaled) and dV: register 4i + 2r + e is key key_g + 8r, dimension 8i + 2 quad + e.
  store_key_gradients<T, kHeadDim>(dk, dv, dk_out + batch * p.dk.batch + kv_head * p.dk.head, p.dk.row,
                                   dv_out + batch * p.dv.batch + kv_head * p.dv.head, p.dv.row, key_g, seq, p.scale,
                                   quad);
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

// The block order's chunk (the kernel's comment): every pair with grouped heads; else, under a
// causal mask, the pairs of about two waves of blocks, and one pair without one.
template <typename T>
std::int64_t chunk_pairs(const AttentionBackwardArgs<T>& args, std::int64_t key_blocks) {
  const std::int64_t pairs = args.kv_heads * args.batch;
  if (args.heads != args.kv_heads) return pairs;
  if (!args.causal) return 1;
  return std::clamp<std::int64_t>(ceil_div<std::int64_t>(2 * current_gpu().sm_count, key_blocks), 1, pairs);
}

template <typename T, int kHeadDim>
void launch_backward_wgmma(const AttentionBackwardArgs<T>& args, float* delta, float* dq_accumulator,
                           cudaStream_t stream) {
  using L = BackwardLayout<kHeadDim>;
  const std::int64_t zq = args.batch * args.heads, matrix = args.seq * kHeadDim;
  const CUtensorMap q_map = head_tensor_map(args.q, args.layout.q, args, args.heads, L::kBlockM);
  const CUtensorMap do_map = head_tensor_map(args.d_o, args.layout.d_o, args, args.heads, L::kBlockM);
  const CUtensorMap k_map = head_tensor_map(args.k, args.layout.k, args, args.kv_heads, L::kBlockN);
  const CUtensorMap v_map = head_tensor_map(args.v, args.layout.v, args, args.kv_heads, L::kBlockN);
  const KeyWindow window = key_window(args);
  // dQ's fp32 accumulator is dense whatever dQ's layout: {column, row, matrix}.
  const CUtensorMap dq_map = make_tensor_map(dq_accumulator, args.seq, kHeadDim, kHeadDim, zq, matrix, L::kBlockM);
  const BackwardParams params{args.lse,
                              delta,
                              resolved(args.layout.dk, args.kv_heads, args.seq, kHeadDim),
                              resolved(args.layout.dv, args.kv_heads, args.seq, kHeadDim),
                              args.seq,
                              static_cast<int>(args.heads),
                              static_cast<int>(args.kv_heads),
                              args.scale,
                              {static_cast<int>(window.left), static_cast<int>(window.right)},
                              chunk_pairs(args, ceil_div<std::int64_t>(args.seq, L::kBlockN))};
  auto* kernel = attention_backward_wgmma_kernel<T, kHeadDim>;
  set_shared_memory(kernel, L::kSharedBytes);
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.seq, L::kBlockN)),
                  static_cast<unsigned>(args.kv_heads), static_cast<unsigned>(args.batch));
  kernel<<<grid, L::kThreads, L::kSharedBytes, stream>>>(q_map, k_map, v_map, do_map, dq_map, args.dk, args.dv, params);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace
#endif  // CUDALAB_SM90A

std::string wgmma_backward_limits(const AttentionShape& shape) {
  const std::string why = wgmma_limits(shape);
  if (!why.empty()) return why;
  if (shape.kv_heads > 65535) return "kv_heads above 65535 (grid y)";
  return "";
}

template <typename T>
void wgmma_backward(const AttentionBackwardArgs<T>& args, cudaStream_t stream) {
  fused_backward::run("attention backward wgmma",
                      wgmma_backward_limits(shape_of(args, current_gpu().compute_capability)), args, stream,
                      [&](float* delta, float* dq_accumulator) {
#if CUDALAB_SM90A
                        if (args.head_dim == 64) {
                          launch_backward_wgmma<T, 64>(args, delta, dq_accumulator, stream);
                        } else {
                          launch_backward_wgmma<T, 128>(args, delta, dq_accumulator, stream);
                        }
#else
                        (void)delta;  // not reached: the limits say the rung was not built
                        (void)dq_accumulator;
#endif
                      });
}

template void wgmma_backward<__nv_bfloat16>(const AttentionBackwardArgs<__nv_bfloat16>&, cudaStream_t);
template void wgmma_backward<__half>(const AttentionBackwardArgs<__half>&, cudaStream_t);

}  // namespace cudalab::attention_variants
