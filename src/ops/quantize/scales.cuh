// The quantization's arithmetic, shared by the ladder and the baseline: the scales from amax, each
// one correctly rounded fp32 division, and one element's product and conversion (the header's
// definition: include/cudalab/quantize.hpp).
#pragma once

#include <cuda_fp8.h>

namespace cudalab::quantize_variants {

inline constexpr float kE4m3Max = 448.0f;

__device__ __forceinline__ float quantize_multiplier(float amax) {
  return amax > 0.0f ? __fdiv_rn(kE4m3Max, amax) : 1.0f;
}
__device__ __forceinline__ float dequantize_scale(float amax) { return amax > 0.0f ? __fdiv_rn(amax, kE4m3Max) : 1.0f; }

// Round to nearest even, saturating to +-448; NaN stays NaN.
__device__ __forceinline__ __nv_fp8_storage_t quantize_one(float x, float multiplier) {
  return __nv_cvt_float_to_fp8(__fmul_rn(x, multiplier), __NV_SATFINITE, __NV_E4M3);
}

}  // namespace cudalab::quantize_variants
