// The softmax ops' CPU reference and check: every output against the formula evaluated in double on
// the inputs as stored (the dtype's values widened exactly), element by element with a tolerance
// derived from the fp32 arithmetic the kernels do, AND cudalab's relative L2 limits for the
// output dtype (fp32 1e-5, bf16 4e-3, fp16 1e-3): a check that fails either fails. Rows are checked
// in parallel (parallel_chunks over the elements, each worker taking the rows that start in its
// range).
//
// Forward, y_j = exp(x_j - m) / S with m the row max and S = sum_k exp(x_k - m). In units of
// u = 2^-24 (one fp32 rounding), relative, first order, d_j = x_j - m <= 0:
//   e_j = exp2f((x_j - m) * log2e): the subtraction, the multiply and log2e's own rounding each
//     move the argument by u |d_j|, so e_j is off by 3 |d_j| u; exp2f adds 2 ulp = 4 u; a second
//     exp2f (the cluster rung rescales a CTA's sum by exp(m_cta - m), the online rung a running sum)
//     adds 4 u more, and the two arguments' |d| add up to |d_j|: 3 |d_j| + 8.
//   S: its terms carry the errors above, weighted: 3 W + 8 with W = sum_k e_k |d_k| / S; the fp32
//     sum adds the tree bound Tolerance::fp32_sum uses, 2 ceil(log2 n) eps = 4 ceil(log2 n) u (the
//     kernels' per-thread runs, and the online rung's rescales and merges, each a rounding or an
//     exp2f, are sequential stretches whose worst case is longer; random rounding keeps them near
//     the square root of their length, well inside the factor of 2 below).
//   y_j = e_j * (1 / S): the reciprocal (or division) and the product, 3 u with slack; for fp32
//     output the last rounding is the product's.
//   So rtol_j = 2 u (3 |d_j| + 3 W + 4 ceil(log2 n) + 19): twice the first-order bound, as
//   fp32_sum allows a factor of 2; bf16 and fp16 outputs add one unit in the last place of the
//   dtype (2^-7, 2^-10 relative), which dominates. Where the argument error matters at all
//   (|d_j| < 104, else exp underflows to 0 in fp32) it stays below 2 u (312 + ...) ~ 4e-5 relative,
//   on values below e^-30 or so; the rows where one value dominates exercise exactly that range.
//   atol: values under fp32's (and bf16's) smallest normal 2^-126 may be flushed or denormal in
//   exp2f and the product, so an absolute 2^-126 is allowed; fp16 outputs under 2^-14 are
//   subnormal with spacing 2^-24, so fp16 allows 2^-24 (twice its rounding).
// Backward, dx_j = y_j (dy_j - D) with D = sum_k y_k dy_k. The kernels form D as an fp32 sum of fp32
// products (fma), off by at most (4 ceil(log2 n) + 1) u A with A = sum_k |y_k dy_k| (the tree bound
// plus the products' rounding); dy_j - D and the product add 2 u |dx_j|. So |dx_j - ref_j| may be
// 2 (|y_j| (4 ceil(log2 n) + 1) u A + 2 u |ref_j|), plus one ulp of a 16-bit output and the atol
// above. A row where y is one-hot makes dy_j - D cancel, and this bound (not a relative one) is
// what judges it.
#pragma once

#include <cstdint>

#include "cudalab/dtype.hpp"
#include "harness/compare.hpp"

namespace cudalab::harness {

// y (rows x features of `dtype`) against softmax(x) row by row. Elements still holding the
// poison pattern count as never written.
Comparison check_softmax(DType dtype, const void* x, const void* y, std::int64_t rows, std::int64_t features);

// dx against y * (dy - sum_j y_j dy_j) row by row, with y, dy and dx of `dtype`.
Comparison check_softmax_backward(DType dtype, const void* y, const void* dy, const void* dx, std::int64_t rows,
                                  std::int64_t features);

}  // namespace cudalab::harness
