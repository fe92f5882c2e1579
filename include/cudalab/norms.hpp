// LayerNorm and RMSNorm over the last dimension of a row-major [rows, features] tensor, forward
// and backward, for fp32, fp16 (__half) and bf16 (__nv_bfloat16) with fp32 arithmetic inside:
//
//   layer_norm: mean = sum(x) / F, var = sum((x - mean)^2) / F (biased, as torch.nn.LayerNorm),
//               rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * gamma + beta
//   rms_norm:   rstd = 1 / sqrt(sum(x^2) / F + eps), y = x * rstd * gamma (as torch.nn.RMSNorm)
//
// The forward saves mean and rstd per row in fp32, as PyTorch does; the backward takes them (with
// x, dy and gamma) and returns dx, dgamma and (LayerNorm) dbeta. dgamma and dbeta are fp32 sums
// over the rows in a fixed order, rounded once to the element type: the same bits on every run
// on the same GPU. LayerNorm's statistics are computed shifted by each row's first element, so a
// row far from zero (1e4 + noise) keeps its noise's digits in fp32.
//
// All pointers are device pointers aligned to their element; any other alignment is accepted
// (rows whose starts are 16-byte aligned get 16-byte vector accesses, others element accesses).
// Outputs must not overlap inputs. Every call is asynchronous on `stream` and validates its
// arguments first: it throws cudalab::Error (invalid_argument for negative sizes, a non-positive
// or non-finite eps, a row of zero features in the forward, a null pointer the sizes need, a
// pointer not aligned to its element, or too small a workspace; cuda when a launch fails).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

// The element types the norms take (T below); any other fails to compile.
#define CUDALAB_NORM_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using NormElements = CUDALAB_ELEMENT_LIST(CUDALAB_NORM_ELEMENTS);

// y = LayerNorm(x) with gamma, beta (features each); mean and rstd (rows each, fp32) may be null,
// then they are not written. rows == 0 does nothing.
template <typename T, typename = RequireElement<T, NormElements>>
void layer_norm(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd, std::int64_t rows,
                std::int64_t features, float eps = 1e-5f, cudaStream_t stream = nullptr);

// Scratch bytes layer_norm_backward needs (fp32 column partial sums); the same for every dtype.
std::size_t layer_norm_backward_workspace_bytes(std::int64_t rows, std::int64_t features);

// dx (rows x features), dgamma and dbeta (features each) from x, dy, gamma and the forward's
// mean and rstd. The statistics are used as given (they need not be x's). rows == 0 writes zeros
// to dgamma and dbeta. The scratch comes from the stream-ordered allocator (cudaMallocAsync) and is
// released on the stream.
template <typename T, typename = RequireElement<T, NormElements>>
void layer_norm_backward(const T* x, const T* dy, const T* gamma, const float* mean, const float* rstd, T* dx,
                         T* dgamma, T* dbeta, std::int64_t rows, std::int64_t features, cudaStream_t stream = nullptr);
// The same with the caller's scratch: `workspace` holds at least
// layer_norm_backward_workspace_bytes(rows, features) bytes of device memory, 16-byte aligned,
// which the call may use until its work on the stream is done (null when that size is 0).
template <typename T, typename = RequireElement<T, NormElements>>
void layer_norm_backward(const T* x, const T* dy, const T* gamma, const float* mean, const float* rstd, T* dx,
                         T* dgamma, T* dbeta, std::int64_t rows, std::int64_t features, void* workspace,
                         std::size_t workspace_bytes, cudaStream_t stream = nullptr);

// y = RMSNorm(x) with gamma (features); rstd (rows, fp32) may be null. rows == 0 does nothing.
template <typename T, typename = RequireElement<T, NormElements>>
void rms_norm(const T* x, const T* gamma, T* y, float* rstd, std::int64_t rows, std::int64_t features,
              float eps = 1e-6f, cudaStream_t stream = nullptr);

std::size_t rms_norm_backward_workspace_bytes(std::int64_t rows, std::int64_t features);

// dx and dgamma from x, dy, gamma and the forward's rstd (used as given).
template <typename T, typename = RequireElement<T, NormElements>>
void rms_norm_backward(const T* x, const T* dy, const T* gamma, const float* rstd, T* dx, T* dgamma, std::int64_t rows,
                       std::int64_t features, cudaStream_t stream = nullptr);
template <typename T, typename = RequireElement<T, NormElements>>
void rms_norm_backward(const T* x, const T* dy, const T* gamma, const float* rstd, T* dx, T* dgamma, std::int64_t rows,
                       std::int64_t features, void* workspace, std::size_t workspace_bytes,
                       cudaStream_t stream = nullptr);

// The add_ forms, a pre-norm block's residual add and its norm in one pass: h = x + residual
// (summed in fp32, rounded to T) is written to residual_out and y = LayerNorm(h) or RMSNorm(h), as
// `h = x + residual; y = norm(h)` computes them; mean and rstd are h's. residual_out overlaps no
// input. rows == 0 does nothing.
template <typename T, typename = RequireElement<T, NormElements>>
void add_layer_norm(const T* x, const T* residual, const T* gamma, const T* beta, T* y, T* residual_out, float* mean,
                    float* rstd, std::int64_t rows, std::int64_t features, float eps = 1e-5f,
                    cudaStream_t stream = nullptr);
template <typename T, typename = RequireElement<T, NormElements>>
void add_rms_norm(const T* x, const T* residual, const T* gamma, T* y, T* residual_out, float* rstd, std::int64_t rows,
                  std::int64_t features, float eps = 1e-6f, cudaStream_t stream = nullptr);

// Their backward, from h (the forward's residual_out), dy, dresidual (the gradient h gets from
// the residual stream) and the saved statistics: dx = the norm's gradient at h + dresidual, which
// is both x's and the residual's gradient; dgamma and dbeta as the plain backward's. The workspace
// is the plain backward's (layer_norm_backward_workspace_bytes, rms_norm_backward_workspace_bytes).
template <typename T, typename = RequireElement<T, NormElements>>
void add_layer_norm_backward(const T* h, const T* dy, const T* dresidual, const T* gamma, const float* mean,
                             const float* rstd, T* dx, T* dgamma, T* dbeta, std::int64_t rows, std::int64_t features,
                             void* workspace, std::size_t workspace_bytes, cudaStream_t stream = nullptr);
template <typename T, typename = RequireElement<T, NormElements>>
void add_rms_norm_backward(const T* h, const T* dy, const T* dresidual, const T* gamma, const float* rstd, T* dx,
                           T* dgamma, std::int64_t rows, std::int64_t features, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream = nullptr);

}  // namespace cudalab
