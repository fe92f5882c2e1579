// Device math through the SFU, for kernels whose error budget allows it (the attention rungs'
// exponentials, GELU (erf) with 16-bit outputs: a value rounded to bf16 or f16 afterwards loses far
// more than these do).
#pragma once

namespace cudalab {

inline constexpr float kLog2e = 1.4426950408889634f;

// 2^x by ex2.approx.ftz (relative error below 2^-22, inputs and outputs flushed below 2^-126):
// exp2f without fast-math adds range scaling around the same instruction (the attention rung mma
// runs 2-5% faster with this one, mma_kernel.cuh).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// 1/x by rcp.approx.ftz (within 1 ulp, subnormals flushed): one MUFU.RCP where 1.0f / x compiles
// to a Newton step and a slow-path branch around it.
__device__ __forceinline__ float fast_reciprocal(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// max(x, y) and min(x, y) that return NaN where either is NaN (max.NaN, min.NaN: one FMNMX each).
// fmaxf and fminf return the other operand there, and a clamp by comparisons that keeps the NaN
// costs a compare and a select a side.
__device__ __forceinline__ float max_nan(float x, float y) {
  float z;
  asm("max.NaN.f32 %0, %1, %2;\n" : "=f"(z) : "f"(x), "f"(y));
  return z;
}

__device__ __forceinline__ float min_nan(float x, float y) {
  float z;
  asm("min.NaN.f32 %0, %1, %2;\n" : "=f"(z) : "f"(x), "f"(y));
  return z;
}

// tanh(x) as 1 - 2 / (e^(2|x|) + 1), the sign put back: one ex2.approx and one rcp.approx, within a
// few 2^-24 of tanh absolutely (relatively worse only where |x| is under about 2^-10, where the
// difference is still a few 2^-24); +-inf and NaN come out as tanhf's. tanhf is a call of about
// twenty instructions with a branch.
__device__ __forceinline__ float fast_tanh(float x) {
  const float e = fast_exp2(2.0f * kLog2e * fabsf(x));
  return copysignf(1.0f - 2.0f * fast_reciprocal(e + 1.0f), x);
}

}  // namespace cudalab
