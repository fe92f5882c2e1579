// The one 16-byte vector type: 16 / sizeof(T) elements of any element type (4 floats or int32s,
// 8 halves or bfloat16s, 16 bytes), loaded and stored as a single 128-bit access. A warp whose
// lanes each move one Vector16 moves 512 contiguous bytes per instruction, which is what a
// memory-bound kernel needs to keep enough bytes in flight on Hopper's HBM.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

namespace cudalab {

// True when `pointer` may be read or written as 16-byte vectors (its address is a multiple of 16).
__host__ __device__ inline bool is_aligned16(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0;
}

template <typename T>
struct alignas(16) Vector16 {
  static_assert(16 % sizeof(T) == 0, "Vector16 holds whole elements");
  static constexpr int kCount = static_cast<int>(16 / sizeof(T));
  T element[kCount];

  __host__ __device__ T& operator[](int i) { return element[i]; }
  __host__ __device__ const T& operator[](int i) const { return element[i]; }
};

// `pointer` must be 16-byte aligned (is_aligned16). Going through uint4 makes the compiler emit
// one 128-bit load or store (LDG.E.128 / STG.E.128) whatever T is.
template <typename T>
__device__ __forceinline__ Vector16<T> load_vector16(const T* pointer) {
  const uint4 raw = *reinterpret_cast<const uint4*>(pointer);
  Vector16<T> v;
  *reinterpret_cast<uint4*>(&v) = raw;
  return v;
}

template <typename T>
__device__ __forceinline__ void store_vector16(T* pointer, const Vector16<T>& v) {
  *reinterpret_cast<uint4*>(pointer) = *reinterpret_cast<const uint4*>(&v);
}

// An element widened to fp32 (exact) and an fp32 value rounded to the element type (to nearest
// even), for kernels templated on float, __half and __nv_bfloat16.
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__nv_fp8_e4m3 x) { return static_cast<float>(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Elements of T in one 16-byte vector: 4 floats, 8 halves or bfloat16s.
template <typename T>
inline constexpr int kVector16 = Vector16<T>::kCount;

// kCount consecutive elements at p widened to fp32 into out[0, kCount): one 16-byte load when
// kCount fills one (p 16-byte aligned), else kCount is 1 (rows that do not start on 16-byte
// boundaries take elements one at a time).
template <int kCount, typename T>
__device__ __forceinline__ void load_floats(const T* p, float* out) {
  if constexpr (kCount == 1) {
    out[0] = to_float(*p);
  } else {
    static_assert(kCount == kVector16<T>, "one element or one 16-byte vector");
    const Vector16<T> v = load_vector16(p);
#pragma unroll
    for (int i = 0; i < kCount; ++i) out[i] = to_float(v[i]);
  }
}

// in[0, kCount) rounded to T and stored at p, as load_floats reads them.
template <int kCount, typename T>
__device__ __forceinline__ void store_floats(T* p, const float* in) {
  if constexpr (kCount == 1) {
    *p = from_float<T>(in[0]);
  } else {
    static_assert(kCount == kVector16<T>, "one element or one 16-byte vector");
    Vector16<T> v;
#pragma unroll
    for (int i = 0; i < kCount; ++i) v[i] = from_float<T>(in[i]);
    store_vector16(p, v);
  }
}

}  // namespace cudalab
