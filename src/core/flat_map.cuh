// One flat map kernel for elementwise ops: kIn input arrays to kOut output arrays of one element
// type, element by element, in accesses of V elements (1, or one 16-byte vector) with U accesses
// per thread. Each thread loads all U vectors of every input before computing the first: U
// requests in flight per array. The elements of a row past its last whole vector (fewer than V)
// are done one each by the row's first block. fn(const float (&in)[kIn], float (&out)[kOut]) sees
// fp32 values.
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

// The arrays' geometry: `rows` rows of `width` elements, each array's rows its own pitch apart (in
// elements). A flat array of n elements is one row of n (flat_rows). Rows let a map read the two
// halves of a fused projection's output ([rows, 2 * width]: gate, then up) where they lie.
template <int kIn, int kOut>
struct MapRows {
  std::int64_t rows = 1, width = 0;
  std::int64_t in_pitch[kIn] = {};
  std::int64_t out_pitch[kOut] = {};
};

template <int kIn, int kOut>
MapRows<kIn, kOut> flat_rows(std::int64_t n) {
  MapRows<kIn, kOut> shape;
  shape.width = n;
  return shape;
}

// Grid (x, y): x covers a row's vectors, U accesses of kFlatMapBlock threads a block; y walks the
// rows (a row a block row, rows past the grid's 65535 in turn). kRows false: one row, no row loop
// (its pointer arithmetic costs a flat map at the copy rate 2%: ncu counts 9% more instructions).
template <typename T, int V, int U, bool kRows, int kIn, int kOut, typename Fn>
__global__ void __launch_bounds__(kFlatMapBlock)
    flat_map_kernel(FlatArrays<T, kIn, kOut> arrays, MapRows<kIn, kOut> shape, Fn fn) {
  const std::int64_t vectors = shape.width / V;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kFlatMapBlock * U + threadIdx.x;
  const std::int64_t rows = kRows ? shape.rows : 1, row_step = kRows ? gridDim.y : 1;
  for (std::int64_t row = kRows ? blockIdx.y : 0; row < rows; row += row_step) {
    const T* in_row[kIn];
    T* out_row[kOut];
#pragma unroll
    for (int a = 0; a < kIn; ++a) in_row[a] = arrays.in[a] + row * shape.in_pitch[a];
#pragma unroll
    for (int a = 0; a < kOut; ++a) out_row[a] = arrays.out[a] + row * shape.out_pitch[a];
    float in[U][kIn][V] = {};
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::int64_t q = first + k * kFlatMapBlock;
      if (q < vectors) {
#pragma unroll
        for (int a = 0; a < kIn; ++a) load_floats<V>(in_row[a] + q * V, in[k][a]);
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
      for (int a = 0; a < kOut; ++a) store_floats<V>(out_row[a] + q * V, out[a]);
    }
    if (blockIdx.x == 0 && threadIdx.x < shape.width - vectors * V) {
      const std::int64_t i = vectors * V + threadIdx.x;
      float x[kIn], y[kOut];
#pragma unroll
      for (int a = 0; a < kIn; ++a) x[a] = to_float(in_row[a][i]);
      fn(x, y);
#pragma unroll
      for (int a = 0; a < kOut; ++a) out_row[a][i] = from_float<T>(y[a]);
    }
  }
}

template <int V, int U, typename T, int kIn, int kOut, typename Fn>
void launch_flat_map(const FlatArrays<T, kIn, kOut>& arrays, const MapRows<kIn, kOut>& shape, Fn fn,
                     cudaStream_t stream) {
  if (shape.rows == 0 || shape.width == 0) return;
  const std::int64_t blocks =
      std::max<std::int64_t>(1, ceil_div<std::int64_t>(shape.width / V, std::int64_t{kFlatMapBlock} * U));
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "flat map: more than 2^31 - 1 blocks a row");
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(std::min<std::int64_t>(shape.rows, 65535)));
  if (shape.rows == 1) {
    flat_map_kernel<T, V, U, false><<<grid, kFlatMapBlock, 0, stream>>>(arrays, shape, fn);
  } else {
    flat_map_kernel<T, V, U, true><<<grid, kFlatMapBlock, 0, stream>>>(arrays, shape, fn);
  }
  CUDALAB_CHECK_LAUNCH();
}

template <int V, int U, typename T, int kIn, int kOut, typename Fn>
void launch_flat_map(const FlatArrays<T, kIn, kOut>& arrays, std::int64_t n, Fn fn, cudaStream_t stream) {
  launch_flat_map<V, U>(arrays, flat_rows<kIn, kOut>(n), fn, stream);
}

// 16-byte accesses, kFlatMapVectorsPerThread<T> per thread, where every array's rows start 16-byte
// aligned, else element accesses, four per thread.
template <typename T, int kIn, int kOut, typename Fn>
void launch_flat_map_vectorized(const FlatArrays<T, kIn, kOut>& arrays, const MapRows<kIn, kOut>& shape, Fn fn,
                                cudaStream_t stream) {
  bool aligned = true;
  for (const T* p : arrays.in) aligned = aligned && is_aligned16(p);
  for (T* p : arrays.out) aligned = aligned && is_aligned16(p);
  const auto whole_vectors = [](std::int64_t pitch) { return pitch % kVector16<T> == 0; };
  for (std::int64_t pitch : shape.in_pitch) aligned = aligned && (shape.rows == 1 || whole_vectors(pitch));
  for (std::int64_t pitch : shape.out_pitch) aligned = aligned && (shape.rows == 1 || whole_vectors(pitch));
  if (aligned) {
    launch_flat_map<kVector16<T>, kFlatMapVectorsPerThread<T>>(arrays, shape, fn, stream);
  } else {
    launch_flat_map<1, 4>(arrays, shape, fn, stream);
  }
}

template <typename T, int kIn, int kOut, typename Fn>
void launch_flat_map_vectorized(const FlatArrays<T, kIn, kOut>& arrays, std::int64_t n, Fn fn, cudaStream_t stream) {
  launch_flat_map_vectorized(arrays, flat_rows<kIn, kOut>(n), fn, stream);
}

}  // namespace cudalab
