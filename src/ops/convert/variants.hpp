// The conversion ladder: fp32 <-> a 16-bit float type (__half or __nv_bfloat16), both ways. Each
// launcher is templated on the 16-bit type and takes the op's argument struct, whose `direction`
// picks the way; the library entry (convert.cpp) and the registry (register.cpp) fill the same struct.
// Narrowing rounds to nearest even (overflow to +-inf, subnormals kept, NaN stays NaN); widening is
// exact. Either way a conversion is a copy that changes the element size: 6 bytes per element.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace cudalab::convert_variants {

// The values are the op's `direction` parameter.
enum class ConvertDirection { narrow = 0, widen = 1 };

// n elements of one direction's input converted into its output; "half" names the 16-bit type T.
// Only the direction's two pointers are read. Device pointers, each aligned to its element, of any
// other alignment; the input and the output do not overlap.
template <typename T>
struct ConvertArgs {
  using Element = T;
  ConvertDirection direction = ConvertDirection::narrow;
  const float* f32_in = nullptr;  // narrow: fp32 -> T
  T* half_out = nullptr;
  const T* half_in = nullptr;  // widen: T -> fp32
  float* f32_out = nullptr;
  std::int64_t n = 0;
};

// One element per thread, one block of 256 threads per 256 elements, one scalar conversion each
// (__float2half_rn, __float2bfloat16_rn, __half2float, __bfloat162float).
template <typename T>
void one_per_thread(const ConvertArgs<T>& args, cudaStream_t stream);

// A grid sized to resident capacity striding over chunks of one 16-byte output vector (8 elements
// narrowing: two 16-byte fp32 loads; 4 widening: one 8-byte load) and pairwise conversions
// (__float22half2_rn, __float22bfloat162_rn, __half22float2, __bfloat1622float2). A scalar head
// aligns both pointers and a scalar tail finishes n; pointers that never align take one_per_thread.
template <typename T>
void vectorized(const ConvertArgs<T>& args, cudaStream_t stream);

// Baseline: thrust::transform with a conversion functor, what a CUDA programmer would write first.
template <typename T>
void thrust_transform(const ConvertArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::convert_variants
