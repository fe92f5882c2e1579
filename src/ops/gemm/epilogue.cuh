// The last step every ladder kernel shares: c = alpha * acc + beta * c in FP32, rounded to C's
// element type, where beta == 0 leaves the old C unread (it may be uninitialised or NaN, as BLAS
// allows).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/vector.cuh"

namespace cudalab::gemm_variants {

using cudalab::from_float;  // core/vector.cuh; gemm_variants:: names them for the other ops too
using cudalab::to_float;

// c = alpha * acc + beta * old (old: C's value, where C is read; c itself in place).
template <typename T>
__device__ __forceinline__ void blend_store(T* c, const T* old, float alpha, float beta, float acc) {
  *c = from_float<T>(beta == 0.0f ? alpha * acc : fmaf(alpha, acc, beta * to_float(*old)));
}
template <typename T>
__device__ __forceinline__ void blend_store(T* c, float alpha, float beta, float acc) {
  blend_store(c, c, alpha, beta, acc);
}

// Two adjacent outputs of a 16-bit type in one 4-byte access: `c` and `old` must be 4-byte aligned.
template <typename T>
__device__ __forceinline__ void blend_store2(T* c, const T* old, float alpha, float beta, float acc0, float acc1) {
  static_assert(sizeof(T) == 2, "pairs of 16-bit elements");
  struct alignas(4) Pair {
    T x, y;
  };
  Pair out;
  if (beta == 0.0f) {
    out.x = from_float<T>(alpha * acc0);
    out.y = from_float<T>(alpha * acc1);
  } else {
    const Pair before = *reinterpret_cast<const Pair*>(old);
    out.x = from_float<T>(fmaf(alpha, acc0, beta * to_float(before.x)));
    out.y = from_float<T>(fmaf(alpha, acc1, beta * to_float(before.y)));
  }
  *reinterpret_cast<Pair*>(c) = out;
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
