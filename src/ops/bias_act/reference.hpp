// The bias + activation ops' CPU reference in double, and their checks: every output element
// within a bound derived from the fp32 arithmetic the kernels do (below), AND each output tensor
// of 1024 elements or more within cudalab's relative L2 limit for its dtype; a check that fails
// either fails. (Below 1024 elements the relative L2 error is that of the few largest values, which
// the elementwise bound already governs.)
//
// The forward bound, for y = act(v), v = x + bias computed exactly (u = 2^-24, u_T the output
// type's unit roundoff, 2^-8 bf16, 2^-11 fp16, 2^-24 fp32):
//   e = 8 u (|y| + |v|)        evaluating act in fp32: with each instruction at its documented
//                              worst error, the sigmoid form (__expf, __fdividef) stays within
//                              3.5 u (|y| + |v|), the tutorial's tanhf form 1.7, erff 1.5; the |v|
//                              part is the cancellation in 1 + tanh or 1 + erf for v < 0 and
//                              __expf's error growing with its argument
//     + u_T |v act'(v)|        x + bias rounded once before act: in fp32 by the fused kernels, to T
//                              by the unfused baseline, which stores it
//   bound = e + u_T (|y| + e) + half the type's smallest subnormal   (the final rounding to T)
// The backward bound, for dx = dy act'(v):
//   e = 16 u |dy| for GELU     the fp32 derivative's absolute error (the same model gives 10 u for
//                              the sigmoid form, 4.5 u for erf), 0 for ReLU (exact)
//   bound = e + u_T (|dx| + e) + half the smallest subnormal
// and for dbias_j = sum_i dx_ij, an fp32 sum of `rows` terms whose magnitudes add to S_j:
//   e = sum_i 16 u |dy_ij| (GELU) + Tolerance::fp32_sum(rows, S_j) at dbias_j (the tree-order bound
//   with a factor 2 to spare), bound = e + u_T (|dbias_j| + e) + half the smallest subnormal;
// or, for a variant that sums the dx it wrote (rounded to T, as the unfused baseline and dx.sum(0)
// do), the fp32 sum's bound and the final rounding around the exact sum of those written values,
// whose own errors the dx check has already held to theirs (a bound on rounded terms alone would
// have to allow u_T sum_i |dx_ij|, half of |dbias_j| for bf16 at 16384 rows).
// An output that overflowed to +-inf passes when the exact value is within its bound of the type's
// overflow threshold (65520 for fp16), with the same sign.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cudalab/activations.hpp"
#include "cudalab/dtype.hpp"
#include "harness/compare.hpp"

namespace cudalab::harness {

double activation_reference(Activation activation, double v);
double activation_derivative_reference(Activation activation, double v);

// y (rows x features of `dtype`, host copy) against act(x + bias). Indices are y's.
Comparison check_bias_act(DType dtype, Activation activation, const void* x, const void* bias, const void* y,
                          std::int64_t rows, std::int64_t features);

// dx and dbias against the reference; a mismatch at index i < rows * features is dx[i], at
// rows * features + j dbias[j]. Each output is held to the relative L2 limit on its own.
Comparison check_bias_act_backward(DType dtype, Activation activation, const void* x, const void* bias, const void* dy,
                                   const void* dx, const void* dbias, std::int64_t rows, std::int64_t features);

// Host memory check_bias_act_backward needs beyond the tensors: each host thread's column sums.
std::size_t bias_act_backward_check_host_bytes(std::int64_t rows, std::int64_t features);

}  // namespace cudalab::harness
