// Tensor-core rung `mma_swizzled`: mma.sync m16n8k16 fed by ldmatrix from XOR-swizzled shared memory. The block
// and copy are rung `wmma_shared`'s (128x128 tile of C, 256 threads, k in steps of 32, A and B tiles copied
// through registers with 16-byte loads where the rows allow and zero-filling element loads
// otherwise); what changes is below WMMA: each warp's 64x32 sub-tile is 4x4 mma.sync m16n8k16
// products per 16 of k, their operands loaded by ldmatrix.x4 (4 for A, 2 for B: .trans when B is
// K x N, plain when it is N x K) and the accumulators written to C straight from registers. The
// tiles are unpadded; XORing each 16-byte chunk's column index with the row (swizzle) keeps the
// 8 rows one ldmatrix matrix reads in 8 distinct bank groups, and the copies' 16-byte stores too.
// Fixes, relative to rung `wmma_shared`: the fragments' layout is known, so no shared scratch in the epilogue
// and no padding (16 KiB of shared memory per block against 27-28 KiB); every shared load is one
// conflict-free ldmatrix.x4 (rung `wmma_shared`'s BF16 WMMA loads compile to four 32-bit generic loads per
// fragment with nvcc 13.0; its FP16 ones to ldmatrix).
// Costs: the copy is still synchronous (registers, then a barrier), so each warp stalls on global
// memory once per tile unless the SM's other block covers it.
// Its measured speed, beside cuBLAS's: docs/gemm-tensor-cores.md.
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {
namespace {

constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 32;
constexpr int kWarpsM = 2, kWarpsN = 4;  // warp tile 64 x 32
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWarpM = kBlockM / kWarpsM, kWarpN = kBlockN / kWarpsN;
constexpr int kMTiles = kWarpM / 16, kNTiles = kWarpN / 8;  // m16 x n8 accumulator tiles per warp
constexpr int kKChunks = kBlockK / kChunkElements;          // chunks per row along k (A; B as N x K)
constexpr int kNChunks = kBlockN / kChunkElements;          // chunks per row along n (B as K x N)

template <typename T, bool kBTransposed>
__global__ void __launch_bounds__(kThreads, 2)
    mma_swizzled_kernel(GemmArgs<T> p, bool vector_a, bool vector_b, bool c_pairs) {
#if CUDALAB_TENSOR_CORE_SM80
  constexpr int kBRowChunks = kBTransposed ? kKChunks : kNChunks;
  __shared__ alignas(128) T a_tile[kBlockM * kBlockK];
  __shared__ alignas(128) T b_tile[kBlockK * kBlockN];

  const std::int64_t z = blockIdx.z;
  const T* a = p.a + z * p.stride_a;
  const T* b = p.b + z * p.stride_b;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * kBlockM;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * kBlockN;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warp_row = warp / kWarpsN * kWarpM, warp_col = warp % kWarpsN * kWarpN;
  const std::uint32_t a_address = shared_address(a_tile), b_address = shared_address(b_tile);

  float acc[kMTiles][kNTiles][4] = {};
  BlockCopy<T, kBlockM, kBlockN, kBlockK, kThreads, kBTransposed> copy(p, a, b, row0, col0);
  const auto a_offset = [](int row, int chunk) { return swizzle<kKChunks>(row, chunk); };
  const auto b_offset = [](int row, int chunk) { return swizzle<kBRowChunks>(row, chunk); };
  for (std::int64_t k0 = 0; k0 < p.k; k0 += kBlockK) {
    copy.copy_through_registers(a_tile, b_tile, p, vector_a, vector_b, a_offset, b_offset);
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < kBlockK / 16; ++ks) {
      std::uint32_t a_fragments[kMTiles][4], b_fragments[kNTiles][2];
      load_a_fragments<kMTiles, kKChunks>(a_fragments, a_address, warp_row, ks);
      load_b_fragments<kNTiles, kBRowChunks, kBTransposed>(b_fragments, b_address, warp_col, ks);
      warp_mma<T>(acc, a_fragments, b_fragments);
    }
    __syncthreads();  // every warp is done with the tiles before the next copy overwrites them
  }

  T* const c = p.c + z * p.stride_c;
  const OutputMatrix<T> out{c, p.ldc, p.m, p.n, p.alpha, p.beta, c_pairs, c, p.ldc};
  store_mma_accumulators(out, acc, row0 + warp_row, col0 + warp_col);
#else
  __trap();
#endif
}

}  // namespace

std::string mma_swizzled_limits(const GemmShape& shape, int compute_capability) {
  return tensor_core_common_limits(shape, compute_capability, kBlockM, kBlockN);
}

template <typename T>
void mma_swizzled(const GemmArgs<T>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  require_limits("mma_swizzled", mma_swizzled_limits(shape_of(args), current_gpu().compute_capability));
  const dim3 grid = tile_grid(args, kBlockM, kBlockN);
  auto* kernel = args.b_transposed ? mma_swizzled_kernel<T, true> : mma_swizzled_kernel<T, false>;
  kernel<<<grid, kThreads, 0, stream>>>(args, chunks_aligned(args.a, args.lda, args.batch, args.stride_a),
                                        chunks_aligned(args.b, args.ldb, args.batch, args.stride_b),
                                        c_pairs_aligned(args));
  CUDALAB_CHECK_LAUNCH();
}

template void mma_swizzled<__half>(const GemmArgs<__half>&, cudaStream_t);
template void mma_swizzled<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
