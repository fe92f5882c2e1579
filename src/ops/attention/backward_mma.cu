// Backward rung `mma`: FlashAttention-2's backward on mma.sync m16n8k16 (its algorithm 2). A
// block owns 64 keys of one (batch, kv head) and walks the query rows of every query head of the
// kv head's group in tiles of 64, so dK and dV stay in registers and are written once, with no
// atomics. Per query tile, each warp (16 of the block's keys):
//   S^T = K Q^T, dP^T = V dO^T   keys as rows, so P^T and dS^T come out as C fragments that are the
//                                A fragments of the next products, rounded to T in registers;
//   P^T = exp2(S^T c - L c), dS^T = P^T (dP^T - D)   L and D = rowsum(dO o O) of the tile's query
//                                rows from shared memory (a pre-kernel computes D);
//   dV += P^T dO, dK += dS^T Q   dO and Q read from shared memory by ldmatrix.trans;
//   dQ += dS K                   needs every key of the block: dS goes to shared memory, then each
//                                warp takes 16 query rows and adds its share to an fp32 accumulator
//                                with atomicAdd (so dQ's sums are not in a fixed order), which a
//                                last kernel scales and rounds to T.
// Keys past seq and queries past seq or outside the key's window (above the diagonal when causal)
// get P = 0; a block walks only the query tiles that can see its keys. What it costs: Q and dO are
// copied, then waited for, in every step (no overlap); each dQ element takes an atomic per key
// block; at head_dim 128 the dK and dV accumulators fill half the registers.
#include <cstdint>
#include <string>

#include "core/fast_math.cuh"
#include "core/launch.cuh"
#include "core/mma_sync.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/backward_fused.cuh"
#include "ops/attention/fragment_softmax.cuh"
#include "ops/attention/mma_kernel.cuh"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kBlockN = 16 * kWarps;  // keys per block
constexpr int kBlockM = 64;           // query rows per step

template <int kHeadDim>
constexpr std::size_t backward_shared_bytes() {
  // K, V, Q, dO tiles, the dS tile (64 x 64), L and D of the step's rows.
  return static_cast<std::size_t>(2 * kBlockN + 2 * kBlockM) * kHeadDim * kElementBytes +
         static_cast<std::size_t>(kBlockM) * kBlockN * kElementBytes + 2 * kBlockM * sizeof(float);
}

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    attention_backward_mma_kernel(const AttentionBackwardArgs<T> p, const float* __restrict__ delta,
                                  float* __restrict__ dq_accumulator) {
#if CUDALAB_TENSOR_CORE_SM80
  constexpr int kRowChunks = kHeadDim / kChunkElements;
  constexpr int kDsChunks = kBlockN / kChunkElements;  // the dS tile's rows: 64 keys
  constexpr int kDimSteps = kHeadDim / 16;             // k-steps of S^T and dP^T
  constexpr int kQuerySteps = kBlockM / 16;            // k-steps of dV and dK
  constexpr int kQueryTiles = kBlockM / 8;             // n8 tiles of S^T
  constexpr int kDimTiles = kHeadDim / 8;              // n8 tiles of dK, dV and dQ
  extern __shared__ uint4 shared_words[];
  const std::uint32_t k_tile = shared_address(shared_words);
  const std::uint32_t v_tile = k_tile + kBlockN * kHeadDim * kElementBytes;
  const std::uint32_t q_tile = v_tile + kBlockN * kHeadDim * kElementBytes;
  const std::uint32_t do_tile = q_tile + kBlockM * kHeadDim * kElementBytes;
  const std::uint32_t ds_tile = do_tile + kBlockM * kHeadDim * kElementBytes;
  auto* ds_elements = reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(shared_words) + (ds_tile - k_tile));
  auto* lse_scaled = reinterpret_cast<float*>(ds_elements + kBlockM * kBlockN);  // L log2(e) of the step's rows
  float* row_delta = lse_scaled + kBlockM;

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, quad = lane % 4;
  const std::int64_t key0 = static_cast<std::int64_t>(blockIdx.x) * kBlockN;
  const std::int64_t kv_head = blockIdx.y, batch = blockIdx.z, seq = p.seq;
  const std::int64_t group = p.heads / p.kv_heads;
  const std::int64_t kv_batch_head = batch * p.kv_heads + kv_head;
  const T* k = p.k + kv_batch_head * seq * kHeadDim;
  const T* v = p.v + kv_batch_head * seq * kHeadDim;
  copy_rows_async<T, kBlockN, kHeadDim, kThreads>(k_tile, k, key0, seq);
  copy_rows_async<T, kBlockN, kHeadDim, kThreads>(v_tile, v, key0, seq);
  cp_async_commit();

  const int warp_key = 16 * warp;                  // the warp's keys in the block
  const std::int64_t key_g = key0 + warp_key + g;  // this lane's keys: key_g and key_g + 8
  const float exponent_scale = p.scale * kLog2e;
  float dk[kDimTiles][4] = {}, dv[kDimTiles][4] = {};
  // The query tiles that see some of the block's keys (causal, window).
  const KeyWindow window = key_window(p);
  const std::int64_t first_tile = window.first_query(key0) / kBlockM;
  const std::int64_t query_end = window.query_end(key0 + kBlockN - 1, seq);

  for (std::int64_t head = kv_head * group; head < (kv_head + 1) * group; ++head) {
    const std::int64_t batch_head = batch * p.heads + head;
    const T* q = p.q + batch_head * seq * kHeadDim;
    const T* d_o = p.d_o + batch_head * seq * kHeadDim;
    for (std::int64_t q0 = first_tile * kBlockM; q0 < query_end; q0 += kBlockM) {
      __syncthreads();  // the last step is done with Q, dO, dS and the row statistics
      copy_rows_async<T, kBlockM, kHeadDim, kThreads>(q_tile, q, q0, seq);
      copy_rows_async<T, kBlockM, kHeadDim, kThreads>(do_tile, d_o, q0, seq);
      cp_async_commit();
      if (threadIdx.x < kBlockM) {
        const std::int64_t row = q0 + threadIdx.x;
        lse_scaled[threadIdx.x] = row < seq ? p.lse[batch_head * seq + row] * kLog2e : 0.0f;
        row_delta[threadIdx.x] = row < seq ? delta[batch_head * seq + row] : 0.0f;
      }
      cp_async_wait<0>();
      __syncthreads();

      float s[kQueryTiles][4] = {}, dp[kQueryTiles][4] = {};
#pragma unroll
      for (int ks = 0; ks < kDimSteps; ++ks) {
        std::uint32_t a_k[1][4], a_v[1][4];
        load_a_fragments<1, kRowChunks>(a_k, k_tile, warp_key, ks);
        load_a_fragments<1, kRowChunks>(a_v, v_tile, warp_key, ks);
#pragma unroll
        for (int jj = 0; jj < kQueryTiles / 2; ++jj) {
          std::uint32_t b[2][2];
          load_b_fragments<2, kRowChunks, true>(b, q_tile, 16 * jj, ks);
          mma_m16n8k16<T>(s[2 * jj], a_k[0], b[0]);
          mma_m16n8k16<T>(s[2 * jj + 1], a_k[0], b[1]);
          load_b_fragments<2, kRowChunks, true>(b, do_tile, 16 * jj, ks);
          mma_m16n8k16<T>(dp[2 * jj], a_v[0], b[0]);
          mma_m16n8k16<T>(dp[2 * jj + 1], a_v[0], b[1]);
        }
      }
      // P^T and dS^T: lane holds keys key_g (e < 2) and key_g + 8, queries q0 + 8i + 2 quad + (e & 1).
      backward_probabilities<true>(s, key_g, q0, seq, window, quad, SharedRowValues{lse_scaled, quad, 1.0f},
                                   exponent_scale);
      score_gradients(dp, s, SharedRowValues{row_delta, quad, 1.0f});
      // S^T's C fragments of n8 tiles 2j and 2j + 1 are the A fragment of k-step j (16 queries).
      std::uint32_t p_fragments[kQuerySteps][4], ds_fragments[kQuerySteps][4];
      pack_fragment<T>(p_fragments, s);
      pack_fragment<T>(ds_fragments, dp);
#pragma unroll
      for (int j = 0; j < kQuerySteps; ++j)
#pragma unroll
        for (int dj = 0; dj < kDimTiles / 2; ++dj) {
          std::uint32_t b[2][2];
          load_b_fragments<2, kRowChunks, false>(b, do_tile, 16 * dj, j);
          mma_m16n8k16<T>(dv[2 * dj], p_fragments[j], b[0]);
          mma_m16n8k16<T>(dv[2 * dj + 1], p_fragments[j], b[1]);
          load_b_fragments<2, kRowChunks, false>(b, q_tile, 16 * dj, j);
          mma_m16n8k16<T>(dk[2 * dj], ds_fragments[j], b[0]);
          mma_m16n8k16<T>(dk[2 * dj + 1], ds_fragments[j], b[1]);
        }
        // dS (queries x keys) into the shared tile, as rounded for dK above.
#pragma unroll
      for (int i = 0; i < kQueryTiles; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = 8 * i + 2 * quad + (e & 1), column = warp_key + g + 8 * (e / 2);
          ds_elements[swizzle<kDsChunks>(row, column / kChunkElements) + column % kChunkElements] =
              from_float<T>(dp[i][e]);
        }
      __syncthreads();
      // dQ's rows 16 warp .. + 15 of the step, 32 dimensions at a time, into the accumulator.
      const std::int64_t dq_row = q0 + 16 * warp + g;
      float* dq_out = dq_accumulator + (batch_head * seq + dq_row) * kHeadDim + 2 * quad;
#pragma unroll
      for (int piece = 0; piece < kHeadDim / 32; ++piece) {
        float acc[4][4] = {};
#pragma unroll
        for (int ks = 0; ks < kBlockN / 16; ++ks) {
          std::uint32_t a[1][4];
          load_a_fragments<1, kDsChunks>(a, ds_tile, 16 * warp, ks);
#pragma unroll
          for (int dj = 0; dj < 2; ++dj) {
            std::uint32_t b[2][2];
            load_b_fragments<2, kRowChunks, false>(b, k_tile, 32 * piece + 16 * dj, ks);
            mma_m16n8k16<T>(acc[2 * dj], a[0], b[0]);
            mma_m16n8k16<T>(acc[2 * dj + 1], a[0], b[1]);
          }
        }
#pragma unroll
        for (int t = 0; t < 4; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (dq_row + 8 * (e / 2) < seq)
              atomicAdd(dq_out + 8 * (e / 2) * kHeadDim + 32 * piece + 8 * t + (e & 1), acc[t][e]);
      }
    }
  }
  // dK (scaled) and dV of the warp's keys inside the sequence.
  store_key_gradients<T, kHeadDim>(dk, dv, p.dk + kv_batch_head * seq * kHeadDim, kHeadDim,
                                   p.dv + kv_batch_head * seq * kHeadDim, kHeadDim, key_g, seq, p.scale, quad);
#else
  __trap();
#endif  // CUDALAB_TENSOR_CORE_SM80
}

template <typename T, int kHeadDim>
void launch_backward_mma(const AttentionBackwardArgs<T>& args, float* delta, float* dq_accumulator,
                         cudaStream_t stream) {
  constexpr std::size_t shared = backward_shared_bytes<kHeadDim>();
  auto* kernel = attention_backward_mma_kernel<T, kHeadDim>;
  set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), shared);
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.seq, kBlockN)),
                  static_cast<unsigned>(args.kv_heads), static_cast<unsigned>(args.batch));
  kernel<<<grid, kThreads, shared, stream>>>(args, delta, dq_accumulator);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

std::size_t mma_backward_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                                         std::int64_t head_dim) {
  return static_cast<std::size_t>(batch * heads * seq * (dq_accumulator_columns(head_dim) + 1)) * sizeof(float);
}

std::string mma_backward_limits(const AttentionShape& shape) {
  const std::string why = mma_limits(shape);
  if (!why.empty()) return why;
  if (shape.kv_heads > 65535) return "kv_heads above 65535 (grid y)";
  return "";
}

template <typename T>
void mma_backward(const AttentionBackwardArgs<T>& args, cudaStream_t stream) {
  fused_backward::run("attention backward mma", mma_backward_limits(shape_of(args, current_gpu().compute_capability)),
                      args, stream, [&](float* delta, float* dq_accumulator, unsigned* dq_order) {
                        CUDALAB_REQUIRE(dq_order == nullptr,
                                        "attention backward mma: its dQ is summed by atomics in no fixed order; a "
                                        "deterministic backward runs on Hopper's kernel (or the CUDA-core fallback)");
                        if (args.head_dim == 64) {
                          launch_backward_mma<T, 64>(args, delta, dq_accumulator, stream);
                        } else {
                          launch_backward_mma<T, 128>(args, delta, dq_accumulator, stream);
                        }
                      });
}

template void mma_backward<__nv_bfloat16>(const AttentionBackwardArgs<__nv_bfloat16>&, cudaStream_t);
template void mma_backward<__half>(const AttentionBackwardArgs<__half>&, cudaStream_t);

}  // namespace cudalab::attention_variants
