// The one 16-byte vector type: 16 / sizeof(T) elements of any element type (4 floats or int32s,
// 8 halves or bfloat16s, 16 bytes), loaded and stored as a single 128-bit access. A warp whose
// lanes each move one Vector16 moves 512 contiguous bytes per instruction, which is what a
// memory-bound kernel needs to keep enough bytes in flight on Hopper's HBM.
#pragma once

#include <cstdint>

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

}  // namespace cudalab
