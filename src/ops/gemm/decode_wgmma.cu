// decode_wgmma (Hopper, sm_90a): C = alpha A W^T + beta C for at most 64 rows of A (a decode batch's
// tokens) against a weight W stored n x k. The product is a read of W, so the rung is built to keep
// as many of W's bytes in flight as the memory system needs, with few threads: TMA streams 64 rows
// of W (8 KiB a k-tile) and the tokens' k-tile into a ring of 6-10 slots, and one warpgroup
// multiplies them with W as wgmma's A operand and the tokens as its N (8, 16, 32 or 64: m rounded
// up), so no row of the product is padding as it is where the tokens are the M of a 64-row tile
// (wgmma_small).
//
// A weight of 4096 rows is 64 such tiles for 132 SMs, so k is split too: the S CTAs of one tile
// form a cluster along the grid's y (S of 1-8: the most that keep to a CTA an SM, clusters resident),
// each takes an even share of the k-tiles, and the partial sums meet in distributed shared memory:
// each CTA writes its fp32 sums over its ring (every load has landed by then), and after a cluster
// barrier CTA r adds its S-th of the tile's rows (in quads of 4) from every CTA's sums in rank order
// (the same bits on every run) and blends them into C. No scratch in global memory, no second launch.
//
// Fixes, relative to decode_mma: the weight arrives in bulk copies kept 6-10 deep per CTA
// (decode_mma's warps hold one 64-element step of 16 rows each in registers: 1.3 waves of 512
// blocks kept DRAM 74% busy at 8 x 8192 x 8192), and up to 64 tokens share each read of W
// (decode_mma's four token groups read A back from L2 at twice the weight's bytes). Costs: the
// tokens' k-tile crosses from L2 once per CTA and k-tile (at 64 tokens as many bytes as the
// weight's, from L2 only); a cluster launch, two cluster barriers and a read of the peers' sums per
// CTA: on an H100 a single k-tile (8 x 4096 x 64) takes 7.2 us against decode_mma's 5.6. Tiles of
// 128 rows (two m64 wgmmas) ran 4-9% slower at 4096-row weights (half the CTAs for a split, each
// with twice the k) and the same at 8192 (docs/gemm-tensor-cores.md).
#include <algorithm>
#include <cstdint>
#include <string>

#include <cooperative_groups.h>

#include "core/cluster.cuh"
#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/hopper.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {

constexpr int kDecodeWgmmaRows = 64;  // rows of W (columns of C) per CTA: one m64 wgmma
constexpr int kDecodeWgmmaTokens = 64;
constexpr int kDecodeWgmmaMaxSplits = 8;  // the portable cluster size

#if CUDALAB_SM90A
namespace {

using namespace hopper;

constexpr int kRows = kDecodeWgmmaRows;
constexpr int kConsumerThreads = 128, kThreads = kConsumerThreads + 32;  // one consumer warpgroup, one producer warp
constexpr int kWTileBytes = kRows * kBlockK * 2;                         // 8 KiB
// Two CTAs an SM where the tiles outnumber the SMs; a ring of 200 KiB for one CTA an SM measured
// the same (within 2%, both ways, on 128-row tiles).
constexpr int kRingBudget = 96 * 1024;
constexpr int kSumsPitch = kRows + 4;  // floats from one token's sums to the next: + 4 spreads a warp's stores

template <int kTokens>
struct Ring {
  static constexpr int kStageBytes = kWTileBytes + kTokens * static_cast<int>(kRowBytes);
  static constexpr int kStages = kRingBudget / kStageBytes;
  static_assert(kTokens * kSumsPitch * 4 <= kStages * kStageBytes, "the partial sums fit over the ring");
};

template <int kTokens>
struct SharedStorage {
  alignas(1024) std::uint8_t ring[Ring<kTokens>::kStages][Ring<kTokens>::kStageBytes];  // then the partial sums
  PipelineBarriers<Ring<kTokens>::kStages> barriers;
};

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

template <typename T, int kTokens>
__global__ void __launch_bounds__(kThreads, 2)
    decode_wgmma_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap w_map,
                        const WgmmaParams<T> p) {
#if CUDALAB_SM90A_DEVICE
  using Storage = SharedStorage<kTokens>;
  constexpr int kStages = Ring<kTokens>::kStages, kStageBytes = Ring<kTokens>::kStageBytes;
  extern __shared__ std::uint8_t dynamic_shared[];
  const std::uint32_t shared = aligned_shared_base(dynamic_shared);
  float* const sums = reinterpret_cast<float*>(
      dynamic_shared + (shared - static_cast<std::uint32_t>(__cvta_generic_to_shared(dynamic_shared))));
  const TmaPipeline<kStages, kStageBytes> pipeline(shared + offsetof(Storage, ring),
                                                   shared + offsetof(Storage, barriers));
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int thread = static_cast<int>(threadIdx.x);
  const int splits = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  const int n0 = static_cast<int>(blockIdx.x) * kRows;
  const int kt0 = static_cast<int>(static_cast<std::int64_t>(p.k_tiles) * rank / splits);
  const int k_tiles = static_cast<int>(static_cast<std::int64_t>(p.k_tiles) * (rank + 1) / splits) - kt0;
  const int first_quad = kRows / 4 * rank / splits;  // this CTA's rows of C's tile, in quads of 4
  const int quads_per_token = kRows / 4 * (rank + 1) / splits - first_quad;
  if (thread == kConsumerThreads) {
    prefetch_tensor_map(&w_map);
    prefetch_tensor_map(&a_map);
  }
  if (thread == 0) pipeline.init(1);
  __syncthreads();

  RingPosition<kStages> ring;  // the producer's or the consumers', carried across the batch
  for (int z = static_cast<int>(blockIdx.z); z < p.batch; z += static_cast<int>(gridDim.z)) {
    if (thread > kConsumerThreads && p.out.beta != 0.0f) {
      // The old C of this CTA's rows asked into L2 while the weight streams: the blend waits for
      // one L2 latency instead of DRAM's.
      const OutputMatrix<T> out = at_offset(p.out, z * p.stride_c);
      const std::int64_t first = n0 + 4 * first_quad,
                         last = std::min<std::int64_t>(first + 4 * quads_per_token, out.n) - 1;
      for (std::int64_t token = thread - kConsumerThreads - 1; first <= last && token < out.m; token += 31) {
        prefetch_l2(out.old + token * out.ldold + first);
        prefetch_l2(out.old + token * out.ldold + last);
      }
    } else if (thread == kConsumerThreads) {
      produce(pipeline, ring, k_tiles, [&](std::uint32_t stage, std::uint32_t barrier, int i) {
        const int k0 = (kt0 + i) * kBlockK;
        tma_load(stage, &w_map, barrier, k0, n0, z * p.batch_step_b);
        tma_load(stage + kWTileBytes, &a_map, barrier, k0, 0, z * p.batch_step_a);
      });
    } else if (thread < kConsumerThreads) {
      float acc[kTokens / 2] = {};  // W's 64 rows x the tokens
      fence_accumulators(acc);
      int previous = 0;
      for (int i = 0; i < k_tiles; ++i) {
        pipeline.consumer_wait(ring);
        const std::uint32_t w_tile = pipeline.slot(ring.stage), tokens = w_tile + kWTileBytes;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBlockK / 16; ++kk)
          wgmma_ss_narrow_m64k16<T>(acc, k_major_descriptor(w_tile, kk), k_major_descriptor(tokens, kk));
        wgmma_commit();
        wgmma_wait<1>();
        if (i > 0 && thread == 0) pipeline.consumer_release(previous);
        previous = ring.stage;
        ring.advance();
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      if (k_tiles > 0 && thread == 0) pipeline.consumer_release(previous);
      named_barrier_sync(1, kConsumerThreads);  // no wgmma of the warpgroup still reads the ring
      // acc[4i + j]: row 16 w + l / 4 (+ 8 for j >= 2), token 8 i + 2 (l % 4) (+ 1 for odd j).
      const int lane = thread % 32, row = 16 * (thread / 32) + lane / 4, token = 2 * (lane % 4);
#pragma unroll
      for (int i = 0; i < kTokens / 8; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) sums[(8 * i + token + j % 2) * kSumsPitch + row + 8 * (j / 2)] = acc[4 * i + j];
    }
    fence_async_shared();  // the sums are written over slots that TMA fills again for the next matrix
    cluster.sync();

    // This CTA's rows of the tile, every CTA's sums added in rank order: a thread takes 4 adjacent
    // rows of one token (a 16-byte read of each CTA's sums), kBatch such quads with every load issued
    // before the first store.
    const int quads = quads_per_token * static_cast<int>(p.out.m);
    const OutputMatrix<T> out = at_offset(p.out, z * p.stride_c);
    const float* peers[kDecodeWgmmaMaxSplits];
#pragma unroll
    for (int r = 0; r < kDecodeWgmmaMaxSplits; ++r) peers[r] = cluster.map_shared_rank(sums, r < splits ? r : 0);
    constexpr int kBatch = 4;
    for (int q0 = thread; q0 < quads; q0 += kBatch * kThreads) {
      float4 sum[kBatch];
      float old[kBatch][4];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int q = min(q0 + b * kThreads, quads - 1);
        const int token = q / quads_per_token, row = 4 * (first_quad + q % quads_per_token);
        sum[b] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int r = 0; r < kDecodeWgmmaMaxSplits; ++r) {
          if (r >= splits) break;
          const float4 part = *reinterpret_cast<const float4*>(peers[r] + token * kSumsPitch + row);
          sum[b] = make_float4(sum[b].x + part.x, sum[b].y + part.y, sum[b].z + part.z, sum[b].w + part.w);
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const std::int64_t column = static_cast<std::int64_t>(n0) + row + j;
          old[b][j] = out.beta != 0.0f && column < out.n ? to_float(out.old[token * out.ldold + column]) : 0.0f;
        }
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int q = q0 + b * kThreads;
        if (q >= quads) break;
        const int token = q / quads_per_token, row = 4 * (first_quad + q % quads_per_token);
        const float parts[4] = {sum[b].x, sum[b].y, sum[b].z, sum[b].w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const std::int64_t column = static_cast<std::int64_t>(n0) + row + j;
          if (column < out.n)
            out.c[token * out.ldc + column] = from_float<T>(
                out.beta == 0.0f ? out.alpha * parts[j] : fmaf(out.alpha, parts[j], out.beta * old[b][j]));
        }
      }
    }
    cluster.sync();  // no CTA's sums are overwritten while a peer may still read them
  }
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

// The launch of `kernel` on clusters of `splits` CTAs along y.
cudaLaunchConfig_t cluster_config(dim3 grid, int splits, int shared_bytes, cudaStream_t stream,
                                  cudaLaunchAttribute& attribute) {
  attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = 1;
  attribute.val.clusterDim.y = static_cast<unsigned>(splits);
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<std::size_t>(shared_bytes);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

template <typename T, int kTokens>
void launch(const GemmArgs<T>& args, cudaStream_t stream) {
  const WgmmaLaunch<T> launch = prepare_launch(args, "decode_wgmma", kTokens, kRows, kTokens, kRows, 0);
  const WgmmaParams<T>& p = launch.params;
  auto* kernel = decode_wgmma_kernel<T, kTokens>;
  constexpr int kSharedBytes = shared_storage_bytes<SharedStorage<kTokens>>();
  set_shared_memory(kernel, kSharedBytes);
  // How many CTAs share each tile's k: the most (at most the portable cluster, at least one k-tile
  // each) that keep the grid within one CTA an SM, with every cluster resident at once. On an H100
  // clusters of 8 fit only 30 times (240 CTAs), so the 32 tiles of a 4096-row weight in clusters of 8
  // ran as two waves (28 us at 8 x 4096^2). Of the splits that fit, at 8 x 4096^2, 32 x 4096^2 and
  // 64 x 4096 x 14336: 7 took 21.2, 23.3, 54.6 us, 4 19.4, 20.8, 51.7, 3 19.2, 20.2, 54.2, 2 19.8,
  // 21.6, 58.5.
  const std::int64_t tiles = static_cast<std::int64_t>(p.tiles_n) * args.batch;
  const int sm_count = current_gpu().sm_count;
  int splits = std::min(kDecodeWgmmaMaxSplits, std::max(p.k_tiles, 1));
  cudaLaunchAttribute attribute;
  for (; splits > 1; --splits) {
    const cudaLaunchConfig_t probe = cluster_config(dim3(1, splits), splits, kSharedBytes, stream, attribute);
    if (tiles * splits <= sm_count &&
        tiles <= resident_clusters(reinterpret_cast<const void*>(kernel), probe, splits, "decode_wgmma"))
      break;
  }
  const dim3 grid(static_cast<unsigned>(p.tiles_n), static_cast<unsigned>(splits),
                  static_cast<unsigned>(std::min<std::int64_t>(args.batch, 65535)));
  const cudaLaunchConfig_t config = cluster_config(grid, splits, kSharedBytes, stream, attribute);
  CUDALAB_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, launch.a_map, launch.b_map, p));
}

}  // namespace
#endif  // CUDALAB_SM90A

std::string decode_wgmma_limits(const GemmShape& shape, int compute_capability) {
  const std::string why = hopper::wgmma_limits(shape, compute_capability);
  return why.empty() ? decode_limits(shape, compute_capability, kDecodeWgmmaTokens, kDecodeWgmmaRows) : why;
}

template <typename T>
void decode_wgmma(const GemmArgs<T>& args, cudaStream_t stream) {
  require_limits("decode_wgmma", decode_wgmma_limits(shape_of(args), current_gpu().compute_capability));
#if CUDALAB_SM90A
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  if (args.m <= 8) return launch<T, 8>(args, stream);
  if (args.m <= 16) return launch<T, 16>(args, stream);
  if (args.m <= 32) return launch<T, 32>(args, stream);
  launch<T, 64>(args, stream);
#else
  (void)stream;
#endif
}

template void decode_wgmma<__half>(const GemmArgs<__half>&, cudaStream_t);
template void decode_wgmma<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
