// FP8 quantization with one scale for the whole tensor, from the tensor's own largest magnitude
// (current scaling): what a per-tensor-scaled FP8 GEMM (cudalab::gemm_fp8) takes as A and B.
//
//   amax  = max |x_i| over the finite x_i   (NaN and +-inf do not count)
//   scale = amax / 448                      (1 where amax is 0; the dequantization factor gemm_fp8 reads)
//   m     = min(448 / amax, FLT_MAX)        (1 where amax is 0; capped where the quotient overflows)
//   q_i   = e4m3(x_i * m)                   (round to nearest even, saturating to +-448, +-inf
//                                            included; NaN stays NaN)
//
// so the largest finite magnitude lands on e4m3's largest finite value and q_i * scale approximates
// x_i. The divisions are each one correctly rounded fp32 division and x_i * m one fp32 product, so
// the result is defined to the bit (the checks compare bits).
//
// x: n elements of float, __half or __nv_bfloat16; q: n bytes; scale and amax: one float each, all
// device pointers, the outputs apart from x and from each other. 16-byte aligned x and q move in
// 16-byte accesses, others element by element. Tensors that fit in the SMs' shared memory are read
// once (one cooperative kernel: the amax, a grid-wide barrier, then the quantization from shared
// memory), larger ones twice (an amax kernel, then the quantization). Asynchronous on `stream`;
// n == 0 writes amax 0 and scale 1. Throws cudalab::Error: invalid_argument for a negative n, a null
// or misaligned pointer or overlapping arrays; cuda when a launch fails.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

// The element types quantize_fp8 takes (T below); any other fails to compile.
#define CUDALAB_QUANTIZE_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using QuantizeElements = CUDALAB_ELEMENT_LIST(CUDALAB_QUANTIZE_ELEMENTS);

template <typename T, typename = RequireElement<T, QuantizeElements>>
void quantize_fp8(const T* x, __nv_fp8_e4m3* q, float* scale, float* amax, std::int64_t n,
                  cudaStream_t stream = nullptr);

// Delayed scaling, as FP8 training recipes run it: q with a scale chosen before (from the amaxes of
// earlier steps), and this tensor's amax for the next, in one read of x whatever its size:
//
//   m     = min(1 / scale, FLT_MAX)   (1 where scale is not a positive finite float)
//   q_i   = e4m3(x_i * m)             (as quantize_fp8's: saturating, NaN stays NaN)
//   amax  = max |x_i| over the finite x_i
//
// scale: one float on the device (the dequantization factor the GEMM takes with q); amax: one
// float, written. Elements beyond what the scale covers saturate to +-448 (amax tells how far off
// the scale was). Asynchronous on `stream`; n == 0 writes amax 0. Throws cudalab::Error:
// invalid_argument for a negative n, a null or misaligned pointer or overlapping arrays; cuda when
// a launch fails.
template <typename T, typename = RequireElement<T, QuantizeElements>>
void quantize_fp8_scaled(const T* x, const float* scale, __nv_fp8_e4m3* q, float* amax, std::int64_t n,
                         cudaStream_t stream = nullptr);

}  // namespace cudalab
