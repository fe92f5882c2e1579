// Device conversions shared by the convert kernels: one element, or a pair of elements held in
// one register (two for fp32), from fp32 to a 16-bit float type, rounding to nearest even, or back,
// exactly. The pair forms are single instructions on sm_80 and later (F2FP.*.PACK_AB narrowing
// two floats; bf16 widening is a shift).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace cudalab::convert_variants {

template <typename T>
struct PairOf;
template <>
struct PairOf<float> {
  using type = float2;
};
template <>
struct PairOf<__half> {
  using type = __half2;
};
template <>
struct PairOf<__nv_bfloat16> {
  using type = __nv_bfloat162;
};
// Two consecutive elements of T as one value.
template <typename T>
using Pair = typename PairOf<T>::type;

// Conversion<From, To>::one converts an element, ::two a pair.
template <typename From, typename To>
struct Conversion;

template <>
struct Conversion<float, __half> {
  static __device__ __forceinline__ __half one(float x) { return __float2half_rn(x); }
  static __device__ __forceinline__ __half2 two(float2 x) { return __float22half2_rn(x); }
};

template <>
struct Conversion<float, __nv_bfloat16> {
  static __device__ __forceinline__ __nv_bfloat16 one(float x) { return __float2bfloat16_rn(x); }
  static __device__ __forceinline__ __nv_bfloat162 two(float2 x) { return __float22bfloat162_rn(x); }
};

template <>
struct Conversion<__half, float> {
  static __device__ __forceinline__ float one(__half x) { return __half2float(x); }
  static __device__ __forceinline__ float2 two(__half2 x) { return __half22float2(x); }
};

template <>
struct Conversion<__nv_bfloat16, float> {
  static __device__ __forceinline__ float one(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ float2 two(__nv_bfloat162 x) { return __bfloat1622float2(x); }
};

}  // namespace cudalab::convert_variants
