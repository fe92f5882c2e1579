// cudalab::gemm: argument checks, then the pipelined kernel configuration measured fastest.
#include "cudalab/gemm.hpp"

#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/variants.hpp"

namespace cudalab {
namespace gemm_variants {

PipelineConfig tuned_config(int compute_capability, int sm_count, std::int64_t m, std::int64_t n) {
  (void)compute_capability;
  // Measured on an H100 (sm_90, results/nvidia-h100-80gb-hbm3/gemm.json, commit eb9ee2c): the
  // 64x128x16 tile, 3 stages, warp tiled, was the fastest configuration at 1024^3, 4096^3 and
  // 8192^3 (32.3, 46.4, 47.6 TFLOP/s), once its tiles come near one wave (1024^3 gives 128 tiles
  // on 132 SMs). Narrower outputs, or fewer tiles, leave SMs idle and waste half of each tile's
  // columns where n < 128; the 64x64 tile was fastest there (8192x64x8192: 29.5 vs 9.1).
  const std::int64_t tiles = ceil_div<std::int64_t>(m, 64) * ceil_div<std::int64_t>(n, 128);
  if (n >= 128 && 10 * tiles >= 9 * std::int64_t{sm_count}) return {64, 128, 16, 2, 2, 3, true};
  return {64, 64, 16, 1, 2, 3, true};
}

}  // namespace gemm_variants

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
          std::int64_t ldb, float beta, float* c, std::int64_t ldc, cudaStream_t stream, Layout layout) {
  CUDALAB_REQUIRE(layout == Layout::row_major,
                  "gemm: only row-major matrices are supported; for column-major C = A B call it with the "
                  "transposed problem, row-major C^T = B^T A^T (swap A and B, m and n)");
  CUDALAB_REQUIRE(m >= 0 && n >= 0 && k >= 0,
                  "gemm: negative size m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  CUDALAB_REQUIRE(lda >= (k > 0 ? k : 1),
                  "gemm: lda=" + std::to_string(lda) + " is below k=" + std::to_string(k) + " (A is row-major m x k)");
  CUDALAB_REQUIRE(ldb >= (n > 0 ? n : 1),
                  "gemm: ldb=" + std::to_string(ldb) + " is below n=" + std::to_string(n) + " (B is row-major k x n)");
  CUDALAB_REQUIRE(ldc >= (n > 0 ? n : 1),
                  "gemm: ldc=" + std::to_string(ldc) + " is below n=" + std::to_string(n) + " (C is row-major m x n)");
  if (m == 0 || n == 0) return;
  CUDALAB_REQUIRE(c != nullptr, "gemm: C is null");
  CUDALAB_REQUIRE(k == 0 || (a != nullptr && b != nullptr), "gemm: A or B is null");
  CUDALAB_REQUIRE(m <= std::int64_t{65535} * 64, "gemm: m=" + std::to_string(m) + " exceeds 65535 * 64 rows");
  int device = 0, sm_count = 0, major = 0, minor = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const gemm_variants::GemmArgs<float> args{m, n, k, alpha, a, lda, b, ldb, beta, c, ldc};
  gemm_variants::launch_pipelined(gemm_variants::tuned_config(major * 10 + minor, sm_count, m, n), args, stream);
}

}  // namespace cudalab
