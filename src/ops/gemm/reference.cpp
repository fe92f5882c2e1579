#include "ops/gemm/reference.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness/compare.hpp"

namespace cudalab::harness {

GemmReference gemm_reference(std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const float* a,
                             std::int64_t lda, const float* b, std::int64_t ldb, double beta, const float* c0,
                             std::int64_t ldc, bool b_transposed, bool a_transposed) {
  GemmReference out;
  out.value.assign(static_cast<std::size_t>(m * n), 0.0);
  out.bound.assign(static_cast<std::size_t>(m * n), 0.0);
  constexpr std::int64_t kBlockK = 64, kBlockN = 256;
  parallel_chunks(m * std::max<std::int64_t>(n * k, 1), [&](int, std::int64_t begin, std::int64_t end) {
    // Chunks are counted in multiply-adds; each worker takes the rows whose first one it owns.
    const std::int64_t per_row = std::max<std::int64_t>(n * k, 1);
    for (std::int64_t i = (begin + per_row - 1) / per_row; i < m && i * per_row < end; ++i) {
      double* value = &out.value[static_cast<std::size_t>(i * n)];
      double* bound = &out.bound[static_cast<std::size_t>(i * n)];
      for (std::int64_t j0 = 0; j0 < n; j0 += kBlockN) {
        const std::int64_t j1 = std::min(n, j0 + kBlockN);
        for (std::int64_t p0 = 0; p0 < k; p0 += kBlockK) {
          const std::int64_t p1 = std::min(k, p0 + kBlockK);
          for (std::int64_t p = p0; p < p1; ++p) {
            const double x = a_transposed ? a[p * lda + i] : a[i * lda + p];
            for (std::int64_t j = j0; j < j1; ++j) {
              const double y = b_transposed ? b[j * ldb + p] : b[p * ldb + j];
              value[j] += x * y;
              bound[j] += std::fabs(x * y);
            }
          }
        }
      }
      for (std::int64_t j = 0; j < n; ++j) {
        const double old = c0 != nullptr ? c0[i * ldc + j] : 0.0;
        value[j] = alpha * value[j] + beta * old;
        bound[j] = std::fabs(alpha) * bound[j] + std::fabs(beta) * std::fabs(old);
      }
    }
  });
  return out;
}

}  // namespace cudalab::harness

namespace cudalab::harness {

Comparison compare_gemm(const float* out, std::int64_t count, const double* value, const double* bound, std::int64_t k,
                        const GemmTolerance& tolerance) {
  struct alignas(kHostCacheLine) Partial {  // a cache line of its own: one per host thread
    Comparison result;
    double error_squares = 0, reference_squares = 0;
  };
  std::vector<Partial> partials(static_cast<std::size_t>(parallel_workers(count)));
  parallel_chunks(count, [&](int worker, std::int64_t begin, std::int64_t end) {
    Partial& p = partials[static_cast<std::size_t>(worker)];
    for (std::int64_t i = begin; i < end; ++i) {
      const double got = out[i], want = value[i];
      const double error = std::fabs(got - want);
      ++p.result.count;
      p.reference_squares += want * want;
      const bool finite = std::isfinite(got);
      if (!finite) {
        ++p.result.non_finite;
      } else {
        p.error_squares += error * error;
        p.result.max_abs_error = std::max(p.result.max_abs_error, error);
      }
      if (!finite || !(error <= gemm_error_bound(k, bound[i], tolerance, want))) {
        if (p.result.mismatches++ == 0) {
          p.result.first_mismatch = i;
          p.result.first_mismatch_out = got;
          p.result.first_mismatch_ref = want;
        }
      }
    }
  });
  ComparisonBuilder total(reported_tolerance(k, tolerance));
  for (const Partial& p : partials) total.merge(p.result, p.error_squares, p.reference_squares);
  return total.finish();
}

Tolerance reported_tolerance(std::int64_t k, const GemmTolerance& tolerance) {
  return {2.0 * tolerance.input_unit + static_cast<double>(k + 3) * tolerance.accumulate_unit,
          tolerance.output_absolute};
}

}  // namespace cudalab::harness
