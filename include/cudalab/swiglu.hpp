// The gated units in the middle of a transformer's MLP, over two tensors of the same n elements
// (any shape: they are read as flat arrays), and their backward: SwiGLU (Llama), y = silu(gate) *
// up with silu(v) = v * sigmoid(v), and GeGLU (Gemma), y = gelu(gate) * up with GELU's tanh form.
// fp32, fp16 and bf16 with fp32 arithmetic inside, each result rounded once.
//
//   swiglu:   y = silu(g) * u;  dgate = dy * u * s * (1 + g * (1 - s)),  dup = dy * silu(g),  s = sigmoid(g)
//   geglu:    y = gelu(g) * u,  gelu(g) = g (1 + t) / 2,  t = tanh(sqrt(2 / pi) (g + 0.044715 g^3));
//             dgate = dy * u * ((1 + t) / 2 + g (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 g^2) / 2),
//             dup = dy * gelu(g)
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

template <typename T, typename = RequireElement<T, SwigluElements>>
void geglu(const T* gate, const T* up, T* y, std::int64_t n, cudaStream_t stream = nullptr);

template <typename T, typename = RequireElement<T, SwigluElements>>
void geglu_backward(const T* gate, const T* up, const T* dy, T* dgate, T* dup, std::int64_t n,
                    cudaStream_t stream = nullptr);

// The packed forms, over a fused gate-and-up projection's output: x holds `rows` rows of 2 * width
// elements, gate's `width` of them, then up's ([.., 2F] as one Linear of 2F outputs gives them); y
// is rows x width. The backward writes dx in x's layout (dgate's columns, then dup's), so the
// projection's backward takes it as it is. 16-byte accesses when the arrays are 16-byte aligned
// and width is a multiple of 16 bytes. Throws as the flat forms do, and for a negative rows or
// width or a rows * 2 * width that overflows 64 bits.
template <typename T, typename = RequireElement<T, SwigluElements>>
void swiglu_packed(const T* x, T* y, std::int64_t rows, std::int64_t width, cudaStream_t stream = nullptr);

template <typename T, typename = RequireElement<T, SwigluElements>>
void swiglu_packed_backward(const T* x, const T* dy, T* dx, std::int64_t rows, std::int64_t width,
                            cudaStream_t stream = nullptr);

template <typename T, typename = RequireElement<T, SwigluElements>>
void geglu_packed(const T* x, T* y, std::int64_t rows, std::int64_t width, cudaStream_t stream = nullptr);

template <typename T, typename = RequireElement<T, SwigluElements>>
void geglu_packed_backward(const T* x, const T* dy, T* dx, std::int64_t rows, std::int64_t width,
                           cudaStream_t stream = nullptr);

}  // namespace cudalab
