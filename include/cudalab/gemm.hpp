// Single-precision matrix multiply on CUDA cores.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab {

enum class Layout { row_major, column_major };

// C = alpha * A * B + beta * C in FP32 (FFMA, no TF32), asynchronously on `stream`. A is m x k,
// B is k x n, C is m x n, all row-major with leading dimensions (row pitches, in elements)
// lda >= k, ldb >= n, ldc >= n. Any m, n, k >= 0 and any alignment: whole 16-byte-aligned tiles
// take the unpredicated path, the rest a predicated one. beta == 0 never reads C (it may hold
// NaN); k == 0 gives C = beta * C; m == 0 or n == 0 does nothing. C must not overlap A or B.
// Each result is a sum of k products in an order fixed per shape: |error| <= about
// (k + 3) 2^-24 (|alpha| |A||B| + |beta| |C|) element-wise, deterministic run to run.
// Throws cudalab::Error (invalid_argument) for negative sizes, leading dimensions below the row
// length, null pointers with non-zero sizes, m beyond 65535 * 64 rows, or `layout` other than
// row_major (pass the transposed problem instead: column-major C = A B is row-major C^T = B^T A^T).
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
          std::int64_t ldb, float beta, float* c, std::int64_t ldc, cudaStream_t stream = nullptr,
          Layout layout = Layout::row_major);

}  // namespace cudalab
