// CPU reference for C = alpha A B + beta C0 (row-major, strided), in double: the reference value
// and, per element, the magnitude |alpha| (|A| |B|)_ij + |beta| |C0_ij| that the fp32 error bound
// scales with. c0 may be null: no C term. Blocked over k and j so B's rows stay in cache; rows are split over host
// threads.
#pragma once

#include <cstdint>
#include <vector>

namespace cudalab::harness {

struct GemmReference {
  std::vector<double> value;  // m x n, dense row-major
  std::vector<double> bound;
};

GemmReference gemm_reference(std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const float* a,
                             std::int64_t lda, const float* b, std::int64_t ldb, double beta, const float* c0,
                             std::int64_t ldc);

// The error allowed for one fp32 result with k products: each product and partial sum rounds
// once (fused multiply-add), then alpha*acc and the beta*C0 term round: (k + 3) units of 2^-24
// of the magnitude bound, the classical first-order bound gamma_{k+3} for any summation order.
// `input_unit` adds a relative error of the inputs themselves (TF32 rounds them to 10 bits).
double gemm_error_bound(std::int64_t k, double magnitude, double input_unit = 0.0);

}  // namespace cudalab::harness

#include "harness/compare.hpp"

namespace cudalab::harness {

// out[i] against value[i] within gemm_error_bound(k, bound[i], input_unit), for i in [0, count).
// Reported tolerance: rtol = the bound's factor, relative to bound[i] rather than to |value[i]|.
Comparison compare_gemm(const float* out, std::int64_t count, const double* value, const double* bound, std::int64_t k,
                        double input_unit = 0.0);

}  // namespace cudalab::harness
