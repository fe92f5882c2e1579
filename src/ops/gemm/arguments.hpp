// The argument checks every GEMM library call makes (FP32, BF16, FP16, single or batched), each a
// cudalab::Error (invalid_argument) naming the argument.
#pragma once

#include <string>

#include "cudalab/error.hpp"
#include "ops/gemm/variants.hpp"

namespace cudalab::gemm_variants {

// Sizes and batch strides not negative, leading dimensions at least a row's length (B's row is k
// long when b_transposed), C's matrices not overlapping, and no null pointer where something will
// be read or written.
template <typename T>
void validate_gemm_args(const GemmArgs<T>& p) {
  const std::string sizes = "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k);
  CUDALAB_REQUIRE(p.m >= 0 && p.n >= 0 && p.k >= 0 && p.batch >= 0,
                  "gemm: negative size " + sizes + " batch=" + std::to_string(p.batch));
  CUDALAB_REQUIRE(p.lda >= (p.k > 0 ? p.k : 1),
                  "gemm: lda=" + std::to_string(p.lda) + " is below k=" + std::to_string(p.k) + " (A is m x k)");
  const std::int64_t b_row = p.b_transposed ? p.k : p.n;
  CUDALAB_REQUIRE(p.ldb >= (b_row > 0 ? b_row : 1), "gemm: ldb=" + std::to_string(p.ldb) +
                                                        " is below the length of B's rows, " + std::to_string(b_row) +
                                                        (p.b_transposed ? " (B is n x k)" : " (B is k x n)"));
  CUDALAB_REQUIRE(p.ldc >= (p.n > 0 ? p.n : 1),
                  "gemm: ldc=" + std::to_string(p.ldc) + " is below n=" + std::to_string(p.n) + " (C is m x n)");
  CUDALAB_REQUIRE(p.stride_a >= 0 && p.stride_b >= 0 && p.stride_c >= 0, "gemm_batched: negative batch stride");
  CUDALAB_REQUIRE(
      p.batch <= 1 || p.stride_c >= p.m * p.ldc || p.m == 0 || p.n == 0,
      "gemm_batched: stride_c=" + std::to_string(p.stride_c) + " makes C's matrices overlap (below m * ldc)");
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  CUDALAB_REQUIRE(p.c != nullptr, "gemm: C is null");
  CUDALAB_REQUIRE(p.k == 0 || (p.a != nullptr && p.b != nullptr), "gemm: A or B is null");
}

}  // namespace cudalab::gemm_variants
