// The last step every ladder kernel shares: c = alpha * acc + beta * c, where beta == 0 leaves the
// old C unread (it may be uninitialised or NaN, as BLAS allows).
#pragma once

namespace cudalab::gemm_variants {

__device__ __forceinline__ void blend_store(float* c, float alpha, float beta, float acc) {
  *c = beta == 0.0f ? alpha * acc : fmaf(alpha, acc, beta * *c);
}

__device__ __forceinline__ void blend_store4(float* c, float alpha, float beta, const float (&acc)[4]) {
  float4 out = make_float4(alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]);
  if (beta != 0.0f) {
    const float4 old = *reinterpret_cast<const float4*>(c);
    out = make_float4(fmaf(alpha, acc[0], beta * old.x), fmaf(alpha, acc[1], beta * old.y),
                      fmaf(alpha, acc[2], beta * old.z), fmaf(alpha, acc[3], beta * old.w));
  }
  *reinterpret_cast<float4*>(c) = out;
}

}  // namespace cudalab::gemm_variants
