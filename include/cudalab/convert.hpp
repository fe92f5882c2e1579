// Element-wise conversion between fp32 and the 16-bit float types, fp16 (__half) and bf16
// (__nv_bfloat16). fp32 -> 16-bit rounds to nearest, ties to even, as __float2half_rn and
// __float2bfloat16_rn do: values past the largest finite one round to +-inf, subnormals are kept,
// NaN stays NaN (its payload is not kept). 16-bit -> fp32 is exact.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace cudalab {

// Converts the n elements of x into y on `stream`, asynchronously. x and y are device pointers to
// arrays that do not overlap, each aligned to its element size; any other alignment is accepted
// (when x and y can both reach a 16-byte boundary at the same element the 16-byte vector kernel
// runs, otherwise a scalar one). n == 0 does nothing.
// Throws cudalab::Error (invalid_argument for n < 0, or with n > 0 a null pointer, a pointer not
// aligned to its element or overlapping arrays; cuda when the launch fails).
void convert(const float* x, __half* y, std::int64_t n, cudaStream_t stream = nullptr);
void convert(const float* x, __nv_bfloat16* y, std::int64_t n, cudaStream_t stream = nullptr);
void convert(const __half* x, float* y, std::int64_t n, cudaStream_t stream = nullptr);
void convert(const __nv_bfloat16* x, float* y, std::int64_t n, cudaStream_t stream = nullptr);

}  // namespace cudalab
