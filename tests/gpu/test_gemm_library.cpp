// cudalab::gemm at odd shapes, strides and offsets, and the FP64 device reference against the
// host one (the device reference checks the large problems of the ladder).
#include <cstring>
#include <vector>

#include "cudalab/gemm.hpp"
#include "cudalab/memory.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/gemm/cublas_gemm.hpp"
#include "ops/gemm/reference.hpp"

namespace cudalab {
namespace {

template <typename T>
std::vector<T> to_host(const T* device, std::int64_t count) {
  std::vector<T> host(static_cast<std::size_t>(count));
  CUDALAB_CUDA_CHECK(cudaMemcpy(host.data(), device, sizeof(T) * count, cudaMemcpyDeviceToHost));
  return host;
}

// C (m x n, pitch ldc, `offset` floats into its buffer) = alpha A B + beta C, checked element-wise,
// and the padding between rows left untouched.
void check_gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t pad, std::int64_t offset, float beta) {
  const std::int64_t lda = (k > 0 ? k : 1) + pad, ldb = n + pad, ldc = n + pad;
  DeviceBuffer<float> a(m * lda + offset), b(k * ldb + offset), c(m * ldc + offset);
  harness::fill_random(a.data(), a.size(), 1, harness::Distribution::uniform, nullptr);
  harness::fill_random(b.data(), b.size(), 2, harness::Distribution::normal, nullptr);
  harness::fill_random(c.data(), c.size(), 3, harness::Distribution::uniform, nullptr);
  const auto ha = to_host(a.data(), a.size()), hb = to_host(b.data(), b.size()), c0 = to_host(c.data(), c.size());
  Stream stream;
  gemm(m, n, k, 0.75f, a.data() + offset, lda, b.data() + offset, ldb, beta, c.data() + offset, ldc, stream.get());
  stream.synchronize();
  const auto hc = to_host(c.data(), c.size());
  const auto ref = harness::gemm_reference(m, n, k, 0.75, ha.data() + offset, lda, hb.data() + offset, ldb, beta,
                                           c0.data() + offset, ldc);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < ldc; ++j) {
      const std::int64_t at = offset + i * ldc + j;
      if (j >= n) {
        ASSERT_EQ(std::memcmp(&hc[at], &c0[at], sizeof(float)), 0) << "padding written at " << i << "," << j;
        continue;
      }
      const double want = ref.value[i * n + j];
      ASSERT_LE(std::fabs(hc[at] - want), harness::gemm_error_bound(k, ref.bound[i * n + j]))
          << m << "x" << n << "x" << k << " pad " << pad << " at " << i << "," << j;
    }
}

TEST(LibraryGemm, OddShapesStridesAndOffsets) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_gemm(1, 1, 1, 0, 0, 0.5f);
  check_gemm(129, 67, 33, 3, 1, -0.5f);   // misaligned rows: the predicated path
  check_gemm(256, 256, 64, 4, 4, 1.0f);   // whole tiles, aligned pitches: the fast path
  check_gemm(300, 130, 0, 0, 0, 2.0f);    // k = 0: C = beta C
  check_gemm(1000, 64, 517, 1, 0, 0.0f);  // beta = 0
}

TEST(LibraryGemm, BetaZeroIgnoresNaNInC) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t side = 128;
  DeviceBuffer<float> a(side * side), b(side * side), c(side * side);
  harness::fill_random(a.data(), a.size(), 5, harness::Distribution::integers, nullptr);
  harness::fill_random(b.data(), b.size(), 6, harness::Distribution::integers, nullptr);
  harness::poison(c.data(), c.bytes(), nullptr);  // NaN
  gemm(side, side, side, 1.0f, a.data(), side, b.data(), side, 0.0f, c.data(), side);
  for (float x : to_host(c.data(), c.size())) ASSERT_FALSE(std::isnan(x));
}

TEST(GemmReference, DeviceMatchesHost) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t m = 67, n = 45, k = 129;
  DeviceBuffer<float> a(m * k), b(k * n), c0(m * n);
  harness::fill_random(a.data(), a.size(), 7, harness::Distribution::normal, nullptr);
  harness::fill_random(b.data(), b.size(), 8, harness::Distribution::uniform, nullptr);
  harness::fill_random(c0.data(), c0.size(), 9, harness::Distribution::uniform, nullptr);
  DeviceBuffer<double> value(m * n), bound(m * n), scratch(m * k + k * n);
  gemm_variants::dgemm_reference(m, n, k, 1.5f, a.data(), b.data(), -0.5f, c0.data(), value.data(), bound.data(),
                                 scratch.data(), nullptr);
  const auto ha = to_host(a.data(), a.size()), hb = to_host(b.data(), b.size()), hc = to_host(c0.data(), c0.size());
  const auto host = harness::gemm_reference(m, n, k, 1.5, ha.data(), k, hb.data(), n, -0.5, hc.data(), n);
  const auto dv = to_host(value.data(), value.size()), db = to_host(bound.data(), bound.size());
  for (std::int64_t i = 0; i < m * n; ++i) {
    // Both in double: agreement to ~k ulps of double.
    ASSERT_NEAR(dv[i], host.value[i], 1e-12 * host.bound[i]) << i;
    ASSERT_NEAR(db[i], host.bound[i], 1e-12 * host.bound[i]) << i;
  }
}

}  // namespace
}  // namespace cudalab
