// The argument checks every GEMM library call makes (FP32, BF16, FP16, single or batched), each a
// cudalab::Error (invalid_argument) naming the argument.
#pragma once

#include <cstdint>
#include <string>

#include "cudalab/error.hpp"
#include "ops/gemm/variants.hpp"

namespace cudalab::gemm_variants {

// Sizes and batch strides not negative, leading dimensions at least a row's length (A's row is m
// long when a_transposed, B's k when b_transposed), C's matrices not overlapping, no null pointer
// where something will be read or written, and every pointer aligned to its element (a misaligned
// one would fault inside a kernel and poison the CUDA context).
template <typename T>
void validate_gemm_args(const GemmArgs<T>& p) {
  const std::string sizes = "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k);
  CUDALAB_REQUIRE(p.m >= 0 && p.n >= 0 && p.k >= 0 && p.batch >= 0,
                  "gemm: negative size " + sizes + " batch=" + std::to_string(p.batch));
  const std::int64_t a_row = p.a_transposed ? p.m : p.k;
  CUDALAB_REQUIRE(p.lda >= (a_row > 0 ? a_row : 1), "gemm: lda=" + std::to_string(p.lda) +
                                                        " is below the length of A's rows, " + std::to_string(a_row) +
                                                        (p.a_transposed ? " (A is k x m)" : " (A is m x k)"));
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
  const auto aligned = [](const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer) % sizeof(T) == 0; };
  const std::string element = " is not aligned to its " + std::to_string(sizeof(T)) + "-byte elements";
  CUDALAB_REQUIRE(aligned(p.c), "gemm: C" + element);
  CUDALAB_REQUIRE(p.k == 0 || aligned(p.a), "gemm: A" + element);
  CUDALAB_REQUIRE(p.k == 0 || aligned(p.b), "gemm: B" + element);
}

}  // namespace cudalab::gemm_variants
