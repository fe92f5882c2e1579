// The quantization's arithmetic, shared by the ladder and the baseline: the scales from amax, each
// one correctly rounded fp32 division, and one element's product and conversion (the header's
// definition: include/cudalab/quantize.hpp).
#pragma once

#include <cfloat>

#include <cuda_fp8.h>

namespace cudalab::quantize_variants {

inline constexpr float kE4m3Max = 448.0f;

// Capped at the largest float: below amax = 448 / FLT_MAX (about 1.3e-36) the quotient overflows,
// and inf would turn the zeros into NaN.
__device__ __forceinline__ float quantize_multiplier(float amax) {
  return amax > 0.0f ? fminf(__fdiv_rn(kE4m3Max, amax), FLT_MAX) : 1.0f;
}
__device__ __forceinline__ float dequantize_scale(float amax) { return amax > 0.0f ? __fdiv_rn(amax, kE4m3Max) : 1.0f; }

// Delayed scaling's multiplier from a given scale: 1 / scale, capped at the largest float; 1 where
// the scale is not a positive finite float.
__device__ __forceinline__ float scaled_multiplier(float scale) {
  return scale > 0.0f && scale < INFINITY ? fminf(__fdiv_rn(1.0f, scale), FLT_MAX) : 1.0f;
}

// A magnitude that counts toward amax: a finite one (NaN and +-inf count as 0).
__device__ __forceinline__ float counted_magnitude(float x) {
  const float a = fabsf(x);
  return a < INFINITY ? a : 0.0f;
}

// Round to nearest even, saturating to +-448 (+-inf included); NaN stays NaN.
__device__ __forceinline__ __nv_fp8_storage_t quantize_one(float x, float multiplier) {
  return __nv_cvt_float_to_fp8(__fmul_rn(x, multiplier), __NV_SATFINITE, __NV_E4M3);
}

}  // namespace cudalab::quantize_variants
