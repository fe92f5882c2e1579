// SwiGLU's gate, the middle of a Llama-style MLP: y = silu(gate) * up, with silu(v) = v * sigmoid(v),
// over two tensors of the same n elements (any shape: they are read as flat arrays), and its
// backward. fp32, fp16 and bf16 with fp32 arithmetic inside, each result rounded once.
//
//   forward:  y     = silu(g) * u
//   backward: dgate = dy * u * s * (1 + g * (1 - s)),  dup = dy * silu(g),  s = sigmoid(g)
//
// Device pointers aligned to their element; 16-byte aligned arrays move in 16-byte accesses,
// others element by element. Outputs must not overlap inputs or each other. Asynchronous on
// `stream`; n == 0 does nothing. Throws cudalab::Error: invalid_argument for a negative n, a null
// or misaligned pointer, or overlapping outputs; cuda when a launch fails.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

// The element types swiglu takes (T below); any other fails to compile.
#define CUDALAB_SWIGLU_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using SwigluElements = CUDALAB_ELEMENT_LIST(CUDALAB_SWIGLU_ELEMENTS);

template <typename T, typename = RequireElement<T, SwigluElements>>
void swiglu(const T* gate, const T* up, T* y, std::int64_t n, cudaStream_t stream = nullptr);

template <typename T, typename = RequireElement<T, SwigluElements>>
void swiglu_backward(const T* gate, const T* up, const T* dy, T* dgate, T* dup, std::int64_t n,
                     cudaStream_t stream = nullptr);

}  // namespace cudalab
