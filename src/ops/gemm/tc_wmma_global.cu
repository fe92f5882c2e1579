// Tensor-core rung `wmma_global`: WMMA straight from global memory. Each warp owns one 16x16 tile of C and
// walks k in steps of 16: wmma::load_matrix_sync reads A's and B's 16x16 fragments from global
// memory and one 16x16x16 product runs on the tensor cores, accumulated in FP32; the epilogue goes
// through a per-warp 1 KiB shared scratch (the accumulator's register layout is unspecified) to
// apply alpha and beta and round to the element type.
// Fixes, relative to the FP32 CUDA-core ladder: the multiply runs on the tensor cores (BF16/FP16
// inputs). Costs: no reuse beyond the 16x16 tile, so every product needs 1 KiB of fresh fragments
// from L1/L2 (32 flops per byte loaded per warp), and WMMA's whole-fragment, 32-byte aligned loads
// restrict the shapes it can take (see wmma_global_limits).
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

constexpr int kWarpsM = 2, kWarpsN = 4;  // 8 warps side by side share A and B rows through L1
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kBlockM = 16 * kWarpsM, kBlockN = 16 * kWarpsN;

template <typename T, bool kBTransposed>
__global__ void __launch_bounds__(kThreads) wmma_global_kernel(GemmArgs<T> p, bool c_pairs) {
#if CUDALAB_TENSOR_CORE_SM80
  namespace wmma = nvcuda::wmma;
  __shared__ alignas(32) float scratch[kWarpsM * kWarpsN][16 * 16];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * kBlockM + warp / kWarpsN * 16;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * kBlockN + warp % kWarpsN * 16;
  if (row0 >= p.m || col0 >= p.n) return;  // a whole warp; no block barrier follows
  const std::int64_t z = blockIdx.z;
  const T* a = p.a + z * p.stride_a + row0 * p.lda;
  // B's 16 columns col0.. : rows of the N x K layout, or columns of the K x N one.
  const T* b = p.b + z * p.stride_b + (kBTransposed ? col0 * p.ldb : col0);
  using BLayout = std::conditional_t<kBTransposed, wmma::col_major, wmma::row_major>;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a_fragment;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BLayout> b_fragment;
  WmmaAccumulator acc;
  wmma::fill_fragment(acc, 0.0f);
  const auto lda = static_cast<unsigned>(p.lda), ldb = static_cast<unsigned>(p.ldb);
#pragma unroll 4
  for (std::int64_t k0 = 0; k0 < p.k; k0 += 16) {
    wmma::load_matrix_sync(a_fragment, a + k0, lda);
    wmma::load_matrix_sync(b_fragment, kBTransposed ? b + k0 : b + k0 * p.ldb, ldb);
    wmma::mma_sync(acc, a_fragment, b_fragment, acc);
  }
  T* const c = p.c + z * p.stride_c;
  const OutputMatrix<T> out{c, p.ldc, p.m, p.n, p.alpha, p.beta, c_pairs, c, p.ldc};
  store_wmma_accumulator(out, acc, scratch[warp], row0, col0);
#else
  __trap();
#endif
}

}  // namespace

std::string wmma_global_limits(const GemmShape& shape, int compute_capability) {
  const std::string common = tensor_core_common_limits(shape, compute_capability, kBlockM, kBlockN);
  if (!common.empty()) return common;
  if (shape.m % 16 != 0 || shape.n % 16 != 0 || shape.k % 16 != 0)
    return "m, n and k must be multiples of 16 (WMMA loads and multiplies whole 16x16 fragments)";
  if (shape.k == 0) return "";  // reads neither A nor B
  if (shape.lda % 8 != 0 || shape.ldb % 8 != 0)
    return "lda and ldb must be multiples of 8 (a WMMA load's leading dimension is a multiple of 16 bytes)";
  // Fragments start at multiples of 16 rows and 16 columns, so only the batch offset can break
  // the 32-byte alignment WMMA loads need.
  if (shape.batch > 1 && (shape.stride_a % 16 != 0 || shape.stride_b % 16 != 0))
    return "stride_a and stride_b must be multiples of 16 (WMMA fragments must be 32-byte aligned)";
  return "";
}

template <typename T>
void wmma_global(const GemmArgs<T>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  require_limits("wmma_global", wmma_global_limits(shape_of(args), current_gpu().compute_capability));
  CUDALAB_REQUIRE(args.k == 0 || (reinterpret_cast<std::uintptr_t>(args.a) % 32 == 0 &&
                                  reinterpret_cast<std::uintptr_t>(args.b) % 32 == 0),
                  "wmma_global: A and B must be 32-byte aligned (WMMA fragment loads)");
  const dim3 grid = tile_grid(args, kBlockM, kBlockN);
  auto* kernel = args.b_transposed ? wmma_global_kernel<T, true> : wmma_global_kernel<T, false>;
  kernel<<<grid, kThreads, 0, stream>>>(args, c_pairs_aligned(args));
  CUDALAB_CHECK_LAUNCH();
}

template void wmma_global<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wmma_global<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
