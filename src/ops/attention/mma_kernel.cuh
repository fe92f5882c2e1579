// The tensor-core attention kernel behind rungs `mma` and `mma_pipelined`, FlashAttention-2's
// forward on mma.sync m16n8k16: a block of Config::kWarps warps takes kBlockM query rows of one
// (batch, head), each warp kMTiles x 16 of them, and walks the keys in tiles of kBlockN = 64.
//
// Per key tile, each warp:
//   S = Q K^T   Q's A fragments come from shared memory by ldmatrix (or stay in registers for the
//               whole walk when a warp has one m16 tile); K's rows are the B operand's n, stored N x K
//               (plain ldmatrix), two n8 tiles at a time, each fragment feeding kMTiles mma.sync.
//   softmax     the running row max m and sum l live in registers; the tile's max over a row takes
//               two shuffles (a row is spread over the 4 lanes of a quad); P = 2^(S c - m c) with
//               c = scale * log2(e) folded into one FMA and the SFU's ex2; l is summed per lane and
//               reduced across the quad once, at the end; O is rescaled by 2^((m_old - m_new) c).
//   O += P V    P's C fragments are exactly the A fragments of P V (two n8 tiles of 16x8 form one
//               16x16 A block), rounded to T in registers, never stored; V's rows are the B
//               operand's k (stored K x N, ldmatrix.trans).
// Shared memory holds Q, one K tile and one V tile, rows of head_dim 16-bit elements in 16-byte
// chunks XOR-swizzled (core/mma_sync.cuh) so ldmatrix is conflict-free.
//
// kPipelined (rung mma_pipelined) changes only the schedule: V's tile is copied while S and the
// softmax run, the next K tile while P V runs (cp.async, one barrier before each use), and key
// tiles no row sees (above the causal diagonal, outside a sliding window) are skipped: whole tiles
// for the block, and per warp the tiles none of its rows sees. Without it (rung mma) K and V are
// copied together and waited for before any arithmetic, and every tile is computed and masked.
//
// Measured at 4x16x4096x128 bf16 on the H100 (a standalone sweep of configurations, one process,
// TFLOP/s non-causal / causal): 8 warps x 1 m-tile 221 / 205, 4 x 1 240 / 223, 4 x 2 272 / 236,
// 8 x 2 281 / 232; at head_dim 64: 4 x 2 256, 8 x 2 228. ex2.approx instead of exp2f: +2-5%. Not
// kept: 32-key tiles (249-253 non-causal), and skipping O's rescale in warps whose row maxima did not
// move (266 against 272: the vote costs what the multiplies did).
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "core/fast_math.cuh"
#include "core/launch.cuh"
#include "core/mma_sync.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/fragment_softmax.cuh"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {

// A block's shape: kWarps warps of kMTiles x 16 query rows each. With one m16 tile a warp keeps Q's
// fragments in registers for the whole walk; with two, every K and V fragment feeds two mma.sync
// (half the shared-memory reads per mma, the limit at one tile: 256 bytes of ldmatrix per mma
// against the SM's 128 bytes a clock) and Q's fragments are read from shared memory each k-step.
template <int kWarpsParam, int kMTilesParam>
struct MmaConfig {
  static constexpr int kWarps = kWarpsParam;
  static constexpr int kMTiles = kMTilesParam;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBlockM = kWarps * kMTiles * 16;  // query rows per block
  static constexpr int kBlockN = 64;                     // keys per tile
  // Shared memory of one block: Q, one K tile and one V tile of 16-bit elements.
  static constexpr std::size_t shared_bytes(int head_dim) {
    return static_cast<std::size_t>(kBlockM + 2 * kBlockN) * head_dim * 2;
  }
};

// The configurations the tensor-core rungs run (measurements above): 8 x 2 for non-causal head_dim
// 128, 4 x 2 elsewhere (head_dim 64, and causal attention, whose diagonal blocks a 256-row block
// would make coarser).
using MmaWideConfig = MmaConfig<8, 2>;
using MmaNarrowConfig = MmaConfig<4, 2>;

#if CUDALAB_TENSOR_CORE_SM80
// Copies rows [row0, row0 + kRows) of a [seq, kHeadDim] matrix into a swizzled shared tile by
// cp.async, kThreads threads sharing the chunks; rows at or past `seq` are zero-filled (a zero V row
// times a zero probability stays 0, where uninitialised shared memory could hold NaN).
template <typename T, int kRows, int kHeadDim, int kThreads>
__device__ __forceinline__ void copy_rows_async(std::uint32_t tile, const T* matrix, std::int64_t row0,
                                                std::int64_t seq) {
  constexpr int kRowChunks = kHeadDim / kChunkElements;
#pragma unroll
  for (int c = static_cast<int>(threadIdx.x); c < kRows * kRowChunks; c += kThreads) {
    const int row = c / kRowChunks, chunk = c % kRowChunks;
    const bool inside = row0 + row < seq;
    const T* source = inside ? matrix + (row0 + row) * kHeadDim + chunk * kChunkElements : matrix;
    cp_async16(tile + kElementBytes * swizzle<kRowChunks>(row, chunk), source, inside ? 16 : 0);
  }
}
#endif  // CUDALAB_TENSOR_CORE_SM80

// A build for a GPU older than sm_80 compiles the kernel as a trap; mma_limits refuses such a GPU.
// kWindowed: the problem has a sliding window (window_binds). Without one the kernel tests the
// causal mask in its own terms, one compare where the window's takes two.
template <typename T, int kHeadDim, bool kPipelined, bool kWindowed, typename Config>
__global__ void __launch_bounds__(Config::kThreads) attention_mma_kernel(const AttentionArgs<T> p) {
#if CUDALAB_TENSOR_CORE_SM80
  constexpr int kThreads = Config::kThreads, kMTiles = Config::kMTiles;
  constexpr int kBlockM = Config::kBlockM, kBlockN = Config::kBlockN;
  constexpr int kRowChunks = kHeadDim / kChunkElements;
  constexpr int kDimSteps = kHeadDim / 16;  // k-steps of Q K^T
  constexpr int kKeySteps = kBlockN / 16;   // k-steps of P V
  constexpr int kKeyTiles = kBlockN / 8;    // n8 tiles of S
  constexpr int kDimTiles = kHeadDim / 8;   // n8 tiles of O
  constexpr bool kQInRegisters = kMTiles == 1;
  extern __shared__ uint4 shared_words[];
  const std::uint32_t q_tile = shared_address(shared_words);
  const std::uint32_t k_tile = q_tile + kBlockM * kHeadDim * kElementBytes;
  const std::uint32_t v_tile = k_tile + kBlockN * kHeadDim * kElementBytes;

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  // Causal blocks near the end of the sequence have the most key tiles: they start first.
  const std::int64_t q0 = static_cast<std::int64_t>(gridDim.x - 1 - blockIdx.x) * kBlockM;
  const std::int64_t head = blockIdx.y, batch = blockIdx.z;
  const std::int64_t kv_head = head / (p.heads / p.kv_heads);
  const std::int64_t seq = p.seq;
  const T* q = p.q + (batch * p.heads + head) * seq * kHeadDim;
  const T* k = p.k + (batch * p.kv_heads + kv_head) * seq * kHeadDim;
  const T* v = p.v + (batch * p.kv_heads + kv_head) * seq * kHeadDim;

  // The pipelined rung walks only the key tiles some row of the block sees (none past its last row
  // when causal, none outside a sliding window); mma walks them all and masks.
  const KeyWindow window = key_window(p);
  std::int64_t key_end = seq;
  int first_tile = 0;
  if constexpr (kPipelined && kWindowed) {
    key_end = window.key_end(q0 + kBlockM - 1, seq);
    first_tile = static_cast<int>(window.first_key(q0) / kBlockN);
  } else if constexpr (kPipelined) {
    if (p.causal) key_end = min(seq, q0 + kBlockM);
  }
  const int tiles = static_cast<int>(ceil_div<std::int64_t>(key_end, kBlockN));

  copy_rows_async<T, kBlockM, kHeadDim, kThreads>(q_tile, q, q0, seq);
  copy_rows_async<T, kBlockN, kHeadDim, kThreads>(k_tile, k, first_tile * std::int64_t{kBlockN}, seq);
  if constexpr (!kPipelined) copy_rows_async<T, kBlockN, kHeadDim, kThreads>(v_tile, v, 0, seq);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  // The warp's rows start at warp_row of the block; lane holds rows g and g + 8 of each m16 tile.
  const int warp_row = 16 * kMTiles * warp;
  std::uint32_t q_fragments[kQInRegisters ? kDimSteps : 1][kMTiles][4];
  if constexpr (kQInRegisters) {
#pragma unroll
    for (int ks = 0; ks < kDimSteps; ++ks) load_a_fragments<kMTiles, kRowChunks>(q_fragments[ks], q_tile, warp_row, ks);
  }

  const std::int64_t row_first = q0 + warp_row + lane / 4;  // row g of m-tile 0
  const std::int64_t warp_first_row = q0 + warp_row, warp_last_row = warp_first_row + 16 * kMTiles - 1;
  const float exponent_scale = p.scale * kLog2e;
  float o[kMTiles][kDimTiles][4] = {};
  SoftmaxRows rows[kMTiles];

  for (int tile = first_tile; tile < tiles; ++tile) {
    const std::int64_t key0 = static_cast<std::int64_t>(tile) * kBlockN;
    if constexpr (kPipelined) {
      if (tile > first_tile) {
        cp_async_wait<0>();  // this K tile
        __syncthreads();     // ... for every thread; and every warp is done with the last V tile
      }
      copy_rows_async<T, kBlockN, kHeadDim, kThreads>(v_tile, v, key0, seq);
      cp_async_commit();
    } else if (tile > 0) {
      __syncthreads();  // every warp is done with the last K and V tiles
      copy_rows_async<T, kBlockN, kHeadDim, kThreads>(k_tile, k, key0, seq);
      copy_rows_async<T, kBlockN, kHeadDim, kThreads>(v_tile, v, key0, seq);
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
    }
    // A warp whose rows see none of this tile's keys has nothing to add (causal, window).
    const bool warp_skips = kPipelined && (kWindowed ? key0 > warp_last_row + window.right ||
                                                           key0 + kBlockN - 1 < warp_first_row - window.left
                                                     : p.causal && key0 > warp_last_row);

    float s[kMTiles][kKeyTiles][4] = {};
    std::uint32_t p_fragments[kMTiles][kKeySteps][4];
    if (!warp_skips) {
#pragma unroll
      for (int ks = 0; ks < kDimSteps; ++ks) {
        std::uint32_t a[kMTiles][4];
        if constexpr (!kQInRegisters) load_a_fragments<kMTiles, kRowChunks>(a, q_tile, warp_row, ks);
          // K's fragments two n8 tiles at a time: four live registers instead of sixteen.
#pragma unroll
        for (int jj = 0; jj < kKeyTiles / 2; ++jj) {
          std::uint32_t k_fragments[2][2];
          load_b_fragments<2, kRowChunks, true>(k_fragments, k_tile, 16 * jj, ks);
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) {
            const std::uint32_t(&q_mi)[4] = kQInRegisters ? q_fragments[ks][mi] : a[mi];
            mma_m16n8k16<T>(s[mi][2 * jj], q_mi, k_fragments[0]);
            mma_m16n8k16<T>(s[mi][2 * jj + 1], q_mi, k_fragments[1]);
          }
        }
      }
      // Keys past the sequence, and outside a row's window (the causal diagonal's), score -inf.
      if constexpr (kWindowed) {
        if (key0 + kBlockN > seq || key0 + kBlockN - 1 > warp_first_row + window.right ||
            key0 < warp_last_row - window.left) {
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) mask_scores(s[mi], key0, row_first + 16 * mi, seq, window, lane);
        }
      } else if (key0 + kBlockN > seq || (p.causal && key0 + kBlockN - 1 > warp_first_row)) {
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi)
          mask_scores(s[mi], key0, row_first + 16 * mi, seq, CausalMask{p.causal}, lane);
      }

#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi) {
        rescale_rows(o[mi], online_softmax(s[mi], rows[mi], exponent_scale));
        pack_fragment<T>(p_fragments[mi], s[mi]);
      }
    }

    if constexpr (kPipelined) {
      cp_async_wait<0>();  // this V tile
      __syncthreads();     // ... for every thread; and every warp is done with this K tile
      if (tile + 1 < tiles) {
        copy_rows_async<T, kBlockN, kHeadDim, kThreads>(k_tile, k, key0 + kBlockN, seq);
        cp_async_commit();
      }
    }
    if (!warp_skips) {
#pragma unroll
      for (int j = 0; j < kKeySteps; ++j) {
#pragma unroll
        for (int dj = 0; dj < kDimTiles / 2; ++dj) {
          std::uint32_t v_fragments[2][2];
          load_b_fragments<2, kRowChunks, false>(v_fragments, v_tile, 16 * dj, j);
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) {
            mma_m16n8k16<T>(o[mi][2 * dj], p_fragments[mi][j], v_fragments[0]);
            mma_m16n8k16<T>(o[mi][2 * dj + 1], p_fragments[mi][j], v_fragments[1]);
          }
        }
      }
    }
  }

  // Normalize and store: lane holds columns 8 di + 2 (lane % 4) .. + 1 of rows g and g + 8.
  const std::int64_t row_base = (batch * p.heads + head) * seq;
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi)
    store_output_rows<T, kHeadDim>(o[mi], rows[mi], p.o + row_base * kHeadDim, kHeadDim, p.lse + row_base,
                                   row_first + 16 * mi, seq, p.scale, lane);
#else
  __trap();
#endif  // CUDALAB_TENSOR_CORE_SM80
}

// Launches the kernel for args' head_dim (64 or 128) in one configuration.
template <typename T, bool kPipelined, typename Config>
void launch_attention_mma_config(const AttentionArgs<T>& args, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.seq, Config::kBlockM)),
                  static_cast<unsigned>(args.heads), static_cast<unsigned>(args.batch));
  const auto run = [&](auto kernel, int head_dim) {
    const std::size_t shared = Config::shared_bytes(head_dim);
    set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), shared);
    kernel<<<grid, Config::kThreads, shared, stream>>>(args);
    CUDALAB_CUDA_CHECK(cudaGetLastError());
  };
  const bool windowed = window_binds(args);
  if (args.head_dim == 64) {
    if (windowed) return run(attention_mma_kernel<T, 64, kPipelined, true, Config>, 64);
    return run(attention_mma_kernel<T, 64, kPipelined, false, Config>, 64);
  }
  if (windowed) return run(attention_mma_kernel<T, 128, kPipelined, true, Config>, 128);
  run(attention_mma_kernel<T, 128, kPipelined, false, Config>, 128);
}

// A rung's launcher: checks, then the configuration for the shape.
template <typename T, bool kPipelined>
void launch_attention_mma(const char* name, const AttentionArgs<T>& args, cudaStream_t stream) {
  static_assert(sizeof(T) == 2, "bf16 or f16");
  const std::string why = mma_limits(shape_of(args, current_gpu().compute_capability));
  CUDALAB_REQUIRE(why.empty(), std::string(name) + ": " + why);
  CUDALAB_REQUIRE(is_aligned16(args.q) && is_aligned16(args.k) && is_aligned16(args.v) && is_aligned16(args.o),
                  std::string(name) + ": q, k, v and o must be 16-byte aligned");
  if (args.batch == 0 || args.heads == 0 || args.seq == 0) return;
  if (args.head_dim == 128 && !args.causal)
    return launch_attention_mma_config<T, kPipelined, MmaWideConfig>(args, stream);
  launch_attention_mma_config<T, kPipelined, MmaNarrowConfig>(args, stream);
}

}  // namespace cudalab::attention_variants
