// Tensor-core rung `wmma_shared`: WMMA from shared-memory tiles. A 256-thread block computes a 128x128 tile of
// C; per 32-wide step of k it copies A's 128x32 and B's 32x128 (or 128x32) tile into shared memory
// (16-byte loads where the operand's rows allow, element loads that zero-fill past the matrix
// otherwise), then each of the 8 warps multiplies its 64x32 sub-tile as 4x2 WMMA 16x16x16 products
// per 16 of k. Rows are padded by 8 elements (16 bytes), so the 8 rows a fragment load reads per
// 16-byte column sit in distinct bank groups. The epilogue goes fragment by fragment through a
// per-warp shared scratch to C, with row and column predicates.
// Fixes, relative to rung `wmma_global`: every element loaded from global memory feeds 128 outputs instead of
// 16, and any m, n, k and leading dimension works. Costs: the copy goes through registers and the
// block waits for it (one barrier before and one after each tile, no overlap within the block),
// and WMMA hides how fragments are loaded.
// Its measured speed, beside cuBLAS's: docs/gemm-tensor-cores.md.
#include <cstdint>
#include <string>
#include <type_traits>

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
constexpr int kFragmentsM = kWarpM / 16, kFragmentsN = kWarpN / 16;
constexpr int kPad = 8;                   // elements: rows stay 16-byte (and every 16th row 32-byte) aligned
constexpr int kKStride = kBlockK + kPad;  // rows along k: A, and B stored N x K
constexpr int kNStride = kBlockN + kPad;  // rows along n: B stored K x N

template <typename T, bool kBTransposed>
__global__ void __launch_bounds__(kThreads, 2)
    wmma_shared_kernel(GemmArgs<T> p, bool vector_a, bool vector_b, bool c_pairs) {
#if CUDALAB_TENSOR_CORE_SM80
  namespace wmma = nvcuda::wmma;
  constexpr int kBStride = kBTransposed ? kKStride : kNStride;
  __shared__ alignas(128) T a_tile[kBlockM * kKStride];
  __shared__ alignas(128) T b_tile[kBTransposed ? kBlockN * kKStride : kBlockK * kNStride];
  __shared__ alignas(32) float scratch[kWarpsM * kWarpsN][16 * 16];

  const std::int64_t z = blockIdx.z;
  const T* a = p.a + z * p.stride_a;
  const T* b = p.b + z * p.stride_b;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * kBlockM;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * kBlockN;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warp_row = warp / kWarpsN * kWarpM, warp_col = warp % kWarpsN * kWarpN;

  using BLayout = std::conditional_t<kBTransposed, wmma::col_major, wmma::row_major>;
  WmmaAccumulator acc[kFragmentsM][kFragmentsN];
#pragma unroll
  for (int i = 0; i < kFragmentsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragmentsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  BlockCopy<T, kBlockM, kBlockN, kBlockK, kThreads, kBTransposed> copy(p, a, b, row0, col0);
  const auto a_offset = [](int row, int chunk) { return row * kKStride + chunk * kChunkElements; };
  const auto b_offset = [](int row, int chunk) { return row * kBStride + chunk * kChunkElements; };
  for (std::int64_t k0 = 0; k0 < p.k; k0 += kBlockK) {
    copy.copy_through_registers(a_tile, b_tile, p, vector_a, vector_b, a_offset, b_offset);
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < kBlockK / 16; ++ks) {
      // B's fragments for the step, then A's one at a time: 4 + 8 fragment registers beside the
      // 64 accumulators (all of A's at once would spill under the 128-register cap).
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BLayout> b_fragment[kFragmentsN];
#pragma unroll
      for (int j = 0; j < kFragmentsN; ++j) {
        if constexpr (kBTransposed) {
          wmma::load_matrix_sync(b_fragment[j], b_tile + (warp_col + 16 * j) * kKStride + 16 * ks, kKStride);
        } else {
          wmma::load_matrix_sync(b_fragment[j], b_tile + 16 * ks * kNStride + warp_col + 16 * j, kNStride);
        }
      }
#pragma unroll
      for (int i = 0; i < kFragmentsM; ++i) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a_fragment;
        wmma::load_matrix_sync(a_fragment, a_tile + (warp_row + 16 * i) * kKStride + 16 * ks, kKStride);
#pragma unroll
        for (int j = 0; j < kFragmentsN; ++j) wmma::mma_sync(acc[i][j], a_fragment, b_fragment[j], acc[i][j]);
      }
    }
    __syncthreads();  // every warp is done with the tiles before the next copy overwrites them
  }

  T* const c = p.c + z * p.stride_c;
  const OutputMatrix<T> out{c, p.ldc, p.m, p.n, p.alpha, p.beta, c_pairs, c, p.ldc};
#pragma unroll
  for (int i = 0; i < kFragmentsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragmentsN; ++j)
      store_wmma_accumulator(out, acc[i][j], scratch[warp], row0 + warp_row + 16 * i, col0 + warp_col + 16 * j);
#else
  __trap();
#endif
}

}  // namespace

std::string wmma_shared_limits(const GemmShape& shape, int compute_capability) {
  return tensor_core_common_limits(shape, compute_capability, kBlockM, kBlockN);
}

template <typename T>
void wmma_shared(const GemmArgs<T>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  require_limits("wmma_shared", wmma_shared_limits(shape_of(args), current_gpu().compute_capability));
  const dim3 grid = tile_grid(args, kBlockM, kBlockN);
  auto* kernel = args.b_transposed ? wmma_shared_kernel<T, true> : wmma_shared_kernel<T, false>;
  kernel<<<grid, kThreads, 0, stream>>>(args, chunks_aligned(args.a, args.lda, args.batch, args.stride_a),
                                        chunks_aligned(args.b, args.ldb, args.batch, args.stride_b),
                                        c_pairs_aligned(args));
  CUDALAB_CHECK_LAUNCH();
}

template void wmma_shared<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wmma_shared<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
