// One flat map kernel for elementwise ops: kIn input arrays to kOut output arrays of one element
// type, element by element, in accesses of V elements (1, or one 16-byte vector) with U accesses
// per thread. Each thread loads all U vectors of every input before computing the first: U
// requests in flight per array. The elements past the last whole vector (fewer than V) are done
// one each by the first block. fn(const float (&in)[kIn], float (&out)[kOut]) sees fp32 values.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"

namespace cudalab {

inline constexpr int kFlatMapBlock = 256;
// 16 elements of each array per thread: four 16-byte vectors of fp32, two of a 16-bit type (whose
// values, widened to fp32, take twice the registers per byte).
template <typename T>
inline constexpr int kFlatMapVectorsPerThread = 16 / kVector16<T>;

template <typename T, int kIn, int kOut>
struct FlatArrays {
  const T* in[kIn];
  T* out[kOut];
};

template <typename T, int V, int U, int kIn, int kOut, typename Fn>
__global__ void __launch_bounds__(kFlatMapBlock)
    flat_map_kernel(FlatArrays<T, kIn, kOut> arrays, std::int64_t n, Fn fn) {
  const std::int64_t vectors = n / V;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kFlatMapBlock * U + threadIdx.x;
  float in[U][kIn][V] = {};
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::int64_t q = first + k * kFlatMapBlock;
    if (q < vectors) {
#pragma unroll
      for (int a = 0; a < kIn; ++a) load_floats<V>(arrays.in[a] + q * V, in[k][a]);
    }
  }
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::int64_t q = first + k * kFlatMapBlock;
    if (q >= vectors) continue;
    float out[kOut][V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      float x[kIn], y[kOut];
#pragma unroll
      for (int a = 0; a < kIn; ++a) x[a] = in[k][a][e];
      fn(x, y);
#pragma unroll
      for (int a = 0; a < kOut; ++a) out[a][e] = y[a];
    }
#pragma unroll
    for (int a = 0; a < kOut; ++a) store_floats<V>(arrays.out[a] + q * V, out[a]);
  }
  if (blockIdx.x == 0 && threadIdx.x < n - vectors * V) {
    const std::int64_t i = vectors * V + threadIdx.x;
    float x[kIn], y[kOut];
#pragma unroll
    for (int a = 0; a < kIn; ++a) x[a] = to_float(arrays.in[a][i]);
    fn(x, y);
#pragma unroll
    for (int a = 0; a < kOut; ++a) arrays.out[a][i] = from_float<T>(y[a]);
  }
}

template <int V, int U, typename T, int kIn, int kOut, typename Fn>
void launch_flat_map(const FlatArrays<T, kIn, kOut>& arrays, std::int64_t n, Fn fn, cudaStream_t stream) {
  if (n == 0) return;
  const std::int64_t blocks = std::max<std::int64_t>(1, ceil_div<std::int64_t>(n / V, std::int64_t{kFlatMapBlock} * U));
  flat_map_kernel<T, V, U><<<static_cast<unsigned>(blocks), kFlatMapBlock, 0, stream>>>(arrays, n, fn);
  CUDALAB_CHECK_LAUNCH();
}

// 16-byte accesses, kFlatMapVectorsPerThread<T> per thread, where every array is 16-byte aligned, else
// element accesses, four per thread.
template <typename T, int kIn, int kOut, typename Fn>
void launch_flat_map_vectorized(const FlatArrays<T, kIn, kOut>& arrays, std::int64_t n, Fn fn, cudaStream_t stream) {
  bool aligned = true;
  for (const T* p : arrays.in) aligned = aligned && is_aligned16(p);
  for (T* p : arrays.out) aligned = aligned && is_aligned16(p);
  if (aligned) {
    launch_flat_map<kVector16<T>, kFlatMapVectorsPerThread<T>>(arrays, n, fn, stream);
  } else {
    launch_flat_map<1, 4>(arrays, n, fn, stream);
  }
}

}  // namespace cudalab
