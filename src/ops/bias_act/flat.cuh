// The flat kernel of the `vectorized` rung, also both passes of the unfused baseline: the tensor
// taken as one array of 16-byte vectors, whatever the row length, so x and y always move in 16-byte
// accesses. Each block takes the next kFlatUnroll x 256 vectors (16 KiB of x), each thread
// kFlatUnroll of them a block apart, all loaded before the first is used: four requests in flight
// per thread, and the blocks in flight sweeping the tensor as one front. Each vector's bias comes
// from the bias array at the vector's column, a 16-byte load when rows are 16-byte aligned (an L1
// hit: a warp's 32 vectors read 512 contiguous bias bytes) and element by element otherwise (a
// vector may then span a row end). One division per thread finds its first column; the rest
// advance by a fixed step, `column_step`. x and y not 16-byte aligned take the same kernel one element at a time.
#pragma once

#include <algorithm>
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
inline constexpr int kFlatUnroll = 4;  // vectors per thread, loaded together

// y[i] = Act(x[i] + bias[i % features]) for i < vectors * V in V-element accesses; the `tail`
// elements after them (fewer than V) one each, by the first block's first threads.
template <typename T, int V, typename Act, BiasRead kBias>
__global__ void __launch_bounds__(kFlatBlockSize)
    bias_act_flat_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y, std::int64_t vectors,
                         int tail, std::int64_t features, std::int64_t column_step) {
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kFlatBlockSize * kFlatUnroll + threadIdx.x;
  std::int64_t column = first * V % features;
  Elements<T, V> in[kFlatUnroll] = {};
#pragma unroll
  for (int u = 0; u < kFlatUnroll; ++u) {
    const std::int64_t q = first + u * kFlatBlockSize;
    if (q < vectors) in[u] = load_elements<V>(x + q * V);
  }
#pragma unroll
  for (int u = 0; u < kFlatUnroll; ++u) {
    const std::int64_t q = first + u * kFlatBlockSize;
    if (q >= vectors) continue;
    float v[V];
    widen<V, T>(in[u], v);
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
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) < tail) {
    const std::int64_t i = vectors * V + threadIdx.x;
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
  const std::int64_t blocks =
      std::max<std::int64_t>(1, ceil_div<std::int64_t>(vectors, std::int64_t{kFlatBlockSize} * kFlatUnroll));
  const std::int64_t column_step = std::int64_t{kFlatBlockSize} * V % features;
  bias_act_flat_kernel<T, V, Act, kBias>
      <<<static_cast<unsigned>(blocks), kFlatBlockSize, 0, stream>>>(x, bias, y, vectors, tail, features, column_step);
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
