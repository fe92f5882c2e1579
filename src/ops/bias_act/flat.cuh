// The flat kernel of the `vectorized` rung, also both passes of the unfused baseline: a resident
// grid strides over the tensor as one array of 16-byte vectors, whatever the row length, so x and y
// always move in 16-byte accesses. Each vector's bias comes from the bias array at the vector's
// column, a 16-byte load when rows are 16-byte aligned (an L1 hit: a warp's 32 vectors read 512
// contiguous bias bytes) and element by element otherwise (a vector may then span a row end). The
// column advances by a fixed step per stride, so the loop divides nothing. x and y not 16-byte
// aligned take the same loop one element at a time.
#pragma once

#include <cstdint>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/bias_act/activation.cuh"

namespace cudalab::bias_act_variants {

// How a flat kernel reads the bias: not at all (the unfused baseline's activation pass), as V
// consecutive elements in one access, or element by element with the column wrapping.
enum class BiasRead { none, vector, gather };

inline constexpr int kFlatBlockSize = 256;

// y[i] = Act(x[i] + bias[i % features]) for i < vectors * V in V-element accesses; the `tail`
// elements after them (fewer than V) one each, by the grid's first threads.
template <typename T, int V, typename Act, BiasRead kBias>
__global__ void __launch_bounds__(kFlatBlockSize)
    bias_act_flat_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y, std::int64_t vectors,
                         int tail, std::int64_t features, std::int64_t column_step) {
  const std::int64_t thread = global_thread_index();
  const std::int64_t stride = global_thread_count();
  std::int64_t column = thread * V % features;
  for (std::int64_t q = thread; q < vectors; q += stride) {
    float v[V];
    load_as_float<V>(x + q * V, v);
    if constexpr (kBias == BiasRead::vector) {
      float b[V];
      load_as_float<V>(bias + column, b);
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] += b[k];
    } else if constexpr (kBias == BiasRead::gather) {
      std::int64_t c = column;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        v[k] += to_float(bias[c]);
        c = c + 1 == features ? 0 : c + 1;
      }
    }
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = Act::forward(v[k]);
    store_as<V>(y + q * V, v);
    column += column_step;
    if (column >= features) column -= features;
  }
  if (thread < tail) {
    const std::int64_t i = vectors * V + thread;
    float v = to_float(x[i]);
    if constexpr (kBias != BiasRead::none) v += to_float(bias[i % features]);
    y[i] = from_float<T>(Act::forward(v));
  }
}

template <typename T, int V, typename Act, BiasRead kBias>
void launch_flat_kernel(const T* x, const T* bias, T* y, std::int64_t elements, std::int64_t features,
                        cudaStream_t stream) {
  const std::int64_t vectors = elements / V;
  const int tail = static_cast<int>(elements % V);
  auto* kernel = bias_act_flat_kernel<T, V, Act, kBias>;
  const int blocks = resident_grid_size(kernel, kFlatBlockSize, vectors);
  const std::int64_t column_step = static_cast<std::int64_t>(blocks) * kFlatBlockSize * V % features;
  kernel<<<blocks, kFlatBlockSize, 0, stream>>>(x, bias, y, vectors, tail, features, column_step);
  CUDALAB_CHECK_LAUNCH();
}

// y = Act(x + bias) over rows x features elements (bias null: y = Act(x)), picking the widest
// accesses the pointers and the row length allow.
template <typename T, typename Act>
void launch_flat(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t features, cudaStream_t stream) {
  const std::int64_t elements = rows * features;
  if (elements == 0) return;
  constexpr int kWidth = kVectorWidth<T>;
  if (!is_aligned16(x) || !is_aligned16(y)) {
    if (bias == nullptr) {
      launch_flat_kernel<T, 1, Act, BiasRead::none>(x, bias, y, elements, features, stream);
    } else {
      launch_flat_kernel<T, 1, Act, BiasRead::vector>(x, bias, y, elements, features, stream);
    }
  } else if (bias == nullptr) {
    launch_flat_kernel<T, kWidth, Act, BiasRead::none>(x, bias, y, elements, features, stream);
  } else if (features % kWidth == 0 && is_aligned16(bias)) {
    launch_flat_kernel<T, kWidth, Act, BiasRead::vector>(x, bias, y, elements, features, stream);
  } else {
    launch_flat_kernel<T, kWidth, Act, BiasRead::gather>(x, bias, y, elements, features, stream);
  }
}

}  // namespace cudalab::bias_act_variants
