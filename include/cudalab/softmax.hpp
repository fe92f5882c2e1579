// Softmax over the last dimension of a row-major [rows, features] array, forward and backward, for
// fp32, fp16 (__half) and bf16 (__nv_bfloat16). Arithmetic is fp32 whatever the element type; the
// row max is subtracted before exponentiating, so rows of any magnitude are safe (a row of only -inf
// gives NaN, as PyTorch's does).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

// The element types softmax takes (T below); any other fails to compile.
#define CUDALAB_SOFTMAX_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using SoftmaxElements = CUDALAB_ELEMENT_LIST(CUDALAB_SOFTMAX_ELEMENTS);

// y[r, j] = exp(x[r, j] - max_k x[r, k]) / sum_k exp(x[r, k] - max_k x[r, k]), on `stream`,
// asynchronously. x and y are device arrays of rows * features elements, aligned to their element
// type, that do not overlap; rows whose length is a multiple of 16 bytes in 16-byte aligned arrays
// are read and written in 16-byte vectors, others element by element. rows == 0 or features == 0
// does nothing. Each row is read once up to 32768 features (and, on compute capability 9.0+, up to
// 262144 features whose rows are a multiple of 16 bytes), twice beyond.
// Throws cudalab::Error: invalid_argument for negative sizes, null or misaligned pointers with work
// to do, or overlapping arrays; cuda when a launch fails.
template <typename T, typename = RequireElement<T, SoftmaxElements>>
void softmax(const T* x, T* y, std::int64_t rows, std::int64_t features, cudaStream_t stream = nullptr);

// The gradient of softmax: dx[r, j] = y[r, j] * (dy[r, j] - sum_k y[r, k] dy[r, k]), where y is the
// forward's output and dy the gradient of the loss with respect to it. y, dy and dx are device
// arrays of rows * features elements aligned to their element type; dx overlaps neither y nor dy
// (y and dy may be the same array). Each row is read once up to 16384 features, twice beyond.
// Throws as softmax does.
template <typename T, typename = RequireElement<T, SoftmaxElements>>
void softmax_backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t features,
                      cudaStream_t stream = nullptr);

}  // namespace cudalab
