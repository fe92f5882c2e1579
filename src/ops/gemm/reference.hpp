// CPU reference for C = alpha A B + beta C0 (row-major, strided), in double: the reference value
// and, per element, the magnitude |alpha| (|A| |B|)_ij + |beta| |C0_ij| that the error bound
// scales with. c0 may be null: no C term. A is m x k, or k x m when `a_transposed` (C = A^T op(B));
// B is k x n, or n x k when `b_transposed` (C = op(A) B^T).
// Blocked over k and j so B's rows stay in cache; rows are split over host threads. BF16 and FP16
// operands are passed widened to float, which holds them exactly.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

namespace cudalab::harness {

struct GemmReference {
  std::vector<double> value;  // m x n, dense row-major
  std::vector<double> bound;
};

GemmReference gemm_reference(std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const float* a,
                             std::int64_t lda, const float* b, std::int64_t ldb, double beta, const float* c0,
                             std::int64_t ldc, bool b_transposed = false, bool a_transposed = false);

// What an engine may do to a result on its way: round the inputs (TF32 keeps 10 mantissa bits),
// round the FP32 accumulator at each of the k additions, round the result to C's element type.
struct GemmTolerance {
  double input_unit = 0.0;
  // 2^-24: round to nearest. Tensor cores are allowed 2^-23 (their FP32 accumulation may truncate).
  double accumulate_unit = 1.0 / 16777216.0;
  double output_unit = 0.0;      // the unit roundoff of C's type when it is narrower than FP32
  double output_absolute = 0.0;  // half the smallest subnormal of C's type (fp16: 2^-25)
};

// The error allowed for one result with k products: each product and partial sum rounds once
// (fused multiply-add), then alpha*acc and the beta*C0 term round: (k + 3) accumulator units of
// the magnitude bound, the classical first-order bound gamma_{k+3} for any summation order; plus
// twice the inputs' own rounding; plus the final rounding of `value` (the exact result) to C's
// type, applied to the value the accumulator may have reached.
// Inline for the device comparison too.
#ifdef __CUDACC__
__host__ __device__
#endif
    inline double
    gemm_error_bound(std::int64_t k, double magnitude, const GemmTolerance& tolerance = {}, double value = 0.0) {
  const double accumulated =
      (2.0 * tolerance.input_unit + static_cast<double>(k + 3) * tolerance.accumulate_unit) * magnitude;
  return accumulated + tolerance.output_unit * (fabs(value) + accumulated) + tolerance.output_absolute;
}

}  // namespace cudalab::harness

#include "harness/compare.hpp"

namespace cudalab::harness {

// out[i] against value[i] within gemm_error_bound(k, bound[i], tolerance, value[i]), for i in
// [0, count). Reported tolerance: rtol = the accumulation's factor, relative to bound[i] rather
// than to |value[i]|; atol = the output type's absolute term.
Comparison compare_gemm(const float* out, std::int64_t count, const double* value, const double* bound, std::int64_t k,
                        const GemmTolerance& tolerance = {});

// The same comparison where out (f32, f16 or bf16), value and bound are device arrays: reduced on
// the device, so a large problem's outputs and references never cross to the host (at the 128256-
// word LM head that is 525M elements, 10 GB of doubles, per variant). Sums are taken in another
// order than the host's, so rel_l2_error may differ from compare_gemm's in its last digits.
Comparison compare_gemm_on_device(DType out_dtype, const void* out, std::int64_t count, const double* value,
                                  const double* bound, std::int64_t k, const GemmTolerance& tolerance,
                                  cudaStream_t stream);

// The tolerance a comparison reports: rtol the accumulation's factor (relative to the bound),
// atol the output type's absolute term.
Tolerance reported_tolerance(std::int64_t k, const GemmTolerance& tolerance);

}  // namespace cudalab::harness
