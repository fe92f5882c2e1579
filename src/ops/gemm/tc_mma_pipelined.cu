// Tensor-core rung `mma_pipelined`: rung `mma_swizzled`'s mma.sync/ldmatrix/swizzle core behind a multistage cp.async
// pipeline. A 256-thread block computes a 128x256 tile of C (8 warps of 64x64: 4x8 m16n8k16
// products per 16 of k); k advances 32 at a time through 4 shared-memory stages (24 KiB each): the
// copies of tiles t+1..t+3 are in flight (cp.async, 16 bytes, global -> shared without registers,
// src-size zero-filling whatever lies past the matrix, a partial last chunk of k included) while
// tile t is multiplied, one barrier per tile. Fragments are double-buffered in registers: k-step
// i+1's ldmatrix loads are issued before k-step i's mma.sync, and the last k-step of a tile loads
// the next tile's first fragments, so the tensor cores do not wait on shared memory either.
// Fixes, relative to rung `mma_swizzled`: copy latency overlaps math, there are no staging registers, and the
// 64x64 warp tile halves the shared-memory traffic per product (8 ldmatrix.x4 per 32 mma.sync,
// against 6 per 16), which on an H100 would otherwise cap mma.sync below its peak.
// Costs: 96 KiB of shared memory and about 240 registers per thread (one block of 8 warps per SM),
// 16-byte aligned rows for cp.async (see mma_pipelined_limits), and a 128x256 tile wastes work on
// small or thin outputs.
// Its measured speed, beside cuBLAS's: docs/gemm-tensor-cores.md.
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {
namespace {

constexpr int kBlockM = 128, kBlockN = 256, kBlockK = 32, kStages = 4;
constexpr int kWarpsM = 2, kWarpsN = 4;  // warp tile 64 x 64
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWarpM = kBlockM / kWarpsM, kWarpN = kBlockN / kWarpsN;
constexpr int kMTiles = kWarpM / 16, kNTiles = kWarpN / 8;
constexpr int kKSteps = kBlockK / 16;
constexpr int kKChunks = kBlockK / kChunkElements;  // chunks per row along k (A; B as N x K)
constexpr int kNChunks = kBlockN / kChunkElements;  // chunks per row along n (B as K x N)
constexpr int kABytes = kBlockM * kBlockK * kElementBytes;
constexpr int kStageBytes = kABytes + kBlockK * kBlockN * kElementBytes;
constexpr int kSharedBytes = kStages * kStageBytes;
static_assert(kKSteps % 2 == 0, "a tile's first k-step must use fragment buffer 0");
static_assert(kSharedBytes <= 99 * 1024, "fits the opt-in shared memory of every sm_80+ GPU (sm_86/89: 99 KiB)");

template <typename T, bool kBTransposed>
__global__ void __launch_bounds__(kThreads, 1) mma_pipelined_kernel(GemmArgs<T> p, bool c_pairs) {
#if CUDALAB_TENSOR_CORE_SM80
  extern __shared__ uint4 shared_words[];
  const std::uint32_t shared = shared_address(shared_words);

  const std::int64_t z = blockIdx.z;
  const T* a = p.a + z * p.stride_a;
  const T* b = p.b + z * p.stride_b;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * kBlockM;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * kBlockN;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warp_row = warp / kWarpsN * kWarpM, warp_col = warp % kWarpsN * kWarpN;
  const std::int64_t tiles = ceil_div<std::int64_t>(p.k, kBlockK);

  // The next k tile into stage `stage`: A's 128x32 block, then B's 32x256 (or 256x32) block.
  BlockCopy<T, kBlockM, kBlockN, kBlockK, kThreads, kBTransposed> copy(p, a, b, row0, col0);
  const auto copy_tile = [&](int stage) {
    const std::uint32_t a_stage = shared + stage * kStageBytes;
    copy.copy_async(a_stage, a_stage + kABytes, p);
  };
  std::uint32_t a_fragments[2][kMTiles][4], b_fragments[2][kNTiles][2];
  const auto load_fragments = [&](int buffer, int stage, int ks) {
    const std::uint32_t a_stage = shared + stage * kStageBytes;
    load_a_fragments<kMTiles, kKChunks>(a_fragments[buffer], a_stage, warp_row, ks);
    load_b_fragments<kNTiles, kBTransposed ? kKChunks : kNChunks, kBTransposed>(b_fragments[buffer], a_stage + kABytes,
                                                                                warp_col, ks);
  };

  // Prologue: tiles 0..kStages-2 in flight. Every thread commits one group per tile slot, empty
  // past the last tile, so "tile t has landed" is always "at most kStages - 2 groups pending".
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) copy_tile(s);
    cp_async_commit();
  }
  cp_async_wait<kStages - 2>();
  __syncthreads();

  float acc[kMTiles][kNTiles][4] = {};
  int read_stage = 0, write_stage = kStages - 1;
  if (tiles > 0) load_fragments(0, read_stage, 0);
  for (std::int64_t tile = 0; tile < tiles; ++tile) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      if (ks == kKSteps - 1) {
        // The next fragments come from tile + 1: wait for its copy. The barrier also means every
        // warp has loaded its last fragments from this tile's stage, which the next tile's copy
        // (ks == 0 below, one iteration on) refills.
        cp_async_wait<kStages - 2>();
        __syncthreads();
        read_stage = read_stage == kStages - 1 ? 0 : read_stage + 1;
      }
      if (ks < kKSteps - 1 || tile + 1 < tiles) load_fragments((ks + 1) % 2, read_stage, (ks + 1) % kKSteps);
      if (ks == 0) {
        if (tile + kStages - 1 < tiles) copy_tile(write_stage);
        cp_async_commit();
        write_stage = write_stage == kStages - 1 ? 0 : write_stage + 1;
      }
      warp_mma<T>(acc, a_fragments[ks % 2], b_fragments[ks % 2]);
    }
  }

  T* const c = p.c + z * p.stride_c;
  const OutputMatrix<T> out{c, p.ldc, p.m, p.n, p.alpha, p.beta, c_pairs, c, p.ldc};
  store_mma_accumulators(out, acc, row0 + warp_row, col0 + warp_col);
#else
  __trap();
#endif
}

}  // namespace

std::string mma_pipelined_limits(const GemmShape& shape, int compute_capability) {
  const std::string common = tensor_core_common_limits(shape, compute_capability, kBlockM, kBlockN);
  if (!common.empty() || shape.k == 0) return common;  // k == 0 reads neither A nor B
  if (shape.lda % kChunkElements != 0 || shape.ldb % kChunkElements != 0)
    return "lda and ldb must be multiples of 8 (cp.async copies 16-byte aligned chunks of A's and B's rows)";
  if (shape.batch > 1 && (shape.stride_a % kChunkElements != 0 || shape.stride_b % kChunkElements != 0))
    return "stride_a and stride_b must be multiples of 8 (cp.async copies 16-byte aligned chunks)";
  return "";
}

template <typename T>
void mma_pipelined(const GemmArgs<T>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  require_limits("mma_pipelined", mma_pipelined_limits(shape_of(args), current_gpu().compute_capability));
  CUDALAB_REQUIRE(args.k == 0 || (is_aligned16(args.a) && is_aligned16(args.b)),
                  "mma_pipelined: A and B must be 16-byte aligned (cp.async sources)");
  const dim3 grid = tile_grid(args, kBlockM, kBlockN);
  auto* kernel = args.b_transposed ? mma_pipelined_kernel<T, true> : mma_pipelined_kernel<T, false>;
  // Above 48 KiB a kernel must opt in (per device).
  set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), kSharedBytes);
  kernel<<<grid, kThreads, kSharedBytes, stream>>>(args, c_pairs_aligned(args));
  CUDALAB_CHECK_LAUNCH();
}

template void mma_pipelined<__half>(const GemmArgs<__half>&, cudaStream_t);
template void mma_pipelined<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
