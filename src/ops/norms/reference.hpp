// The normalization ops' CPU reference and checks. The reference is computed in double from the
// inputs as stored (fp16/bf16 widened exactly) and the eps the kernels use (the parameter rounded
// to fp32). Each output element passes when it is within a bound derived from the fp32 arithmetic
// of the kernels (below), and each of y, dx and rstd must also have a relative L2 error of at
// most output_rel_l2_limit(its dtype) (harness/compare.hpp): a check fails when either fails.
//
// The bounds (u = 2^-24, fp32's unit roundoff; every bound is doubled for slack, then the output's
// own rounding is added: u_out (|ref| + error) plus half the dtype's smallest subnormal):
// - a sum of n fp32 terms of total magnitude m: (2 ceil(log2 n) + 2) 2u m, the tree-order bound
//   of Tolerance::fp32_sum plus the terms' own rounding;
// - LayerNorm forward, with d = x - x[0] (the kernels' shift) and dev = d - mean_d: the shifted
//   mean is off by e_m = sum_bound(F, sum|d|) / F + 2u |mean_d|; the sum of squares by
//   2 e_m sum|dev| + F e_m^2 + 2u sum|dev| |d| + sum_bound(F, sum dev^2) + 2u sum dev^2; rstd
//   (rsqrtf: 2 ulp) by half the variance's relative error plus 4u; y_j by
//   |g_j| rstd (u |d_j| + e_m) + |dev_j rstd g_j| (e_rstd + 3u) + u (|b_j| + |y_j|);
// - RMSNorm forward: the mean square is off by sum_bound(F, sum x^2) / F + 2u mean(x^2); y_j by
//   |y_j| (e_rstd + 2u);
// - backward, from the statistics given: xhat = (x - mean) rstd (2u relative), a = g dy (u);
//   mean(a) and mean(a xhat) are sums of F terms; dx_j = rstd (a_j - mean(a) - xhat_j mean(a xhat))
//   is off by rstd (e_a + e_mean(a) + |xhat_j| e_mean(a xhat) + |mean(a xhat)| e_xhat) + 4u rstd
//   (|a_j| + |mean(a)| + |xhat_j mean(a xhat)|); dgamma_c and dbeta_c are sums of `rows` terms.
// mean, dgamma and dbeta have no relative-L2 limit: each is a sum that may cancel to near zero
// (a row's mean of noise, a column's sum of gradients), so its error is relative to the magnitude
// of its terms, which the elementwise bound already holds it to.
#pragma once

#include <cstdint>

#include "cudalab/dtype.hpp"
#include "harness/compare.hpp"
#include "ops/norms/variants.hpp"

namespace cudalab::harness {

// Host copies of one forward problem's tensors: x (rows x features), gamma and beta (features;
// beta LayerNorm's only) and y of `dtype`; mean (LayerNorm's) and rstd, fp32, one per row.
struct NormForwardHost {
  norms_variants::Norm norm = norms_variants::Norm::layer;
  DType dtype = DType::f32;
  std::int64_t rows = 0;
  std::int64_t features = 0;
  double eps = 1e-5;
  const void* x = nullptr;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  const void* y = nullptr;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  // The add_ forms: the residual input and the sum written (null for the plain norms). The sum
  // must equal x + residual summed in fp32 and rounded to `dtype`, bit for bit, and the
  // statistics and y are checked as the norm of that sum.
  const void* residual = nullptr;
  const void* residual_out = nullptr;
};

// Host copies of one backward problem's tensors: x, dy (rows x features), gamma (features) of
// `dtype`; the saved mean (LayerNorm's) and rstd, fp32; the outputs dx, dgamma and dbeta
// (LayerNorm's) of `dtype`.
struct NormBackwardHost {
  norms_variants::Norm norm = norms_variants::Norm::layer;
  DType dtype = DType::f32;
  std::int64_t rows = 0;
  std::int64_t features = 0;
  const void* x = nullptr;
  const void* dy = nullptr;
  const void* gamma = nullptr;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  const void* dx = nullptr;
  const void* dgamma = nullptr;
  const void* dbeta = nullptr;
  // The add_ forms: the residual's gradient, added to dx (null for the plain norms).
  const void* dresidual = nullptr;
};

// One comparison for all of a problem's outputs: element counts, mismatches and their kinds add
// up; indices count through the outputs in order (y, then the add_ forms' sum, then mean, then
// rstd; dx, then dgamma, then dbeta); the relative L2 error is the largest of the outputs'; the tolerance reported is
// {0, the largest elementwise bound}. An output over its relative-L2 limit whose elements are all
// in bounds counts one mismatch, at its element of largest error.
Comparison check_norm_forward(const NormForwardHost& host);
Comparison check_norm_backward(const NormBackwardHost& host);

}  // namespace cudalab::harness
