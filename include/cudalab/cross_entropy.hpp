// Cross-entropy over a vocabulary: the loss of a language model's logits [rows, vocab] against one
// target class per row, its log-sum-exp, and its gradient, with label smoothing and an ignored
// target. fp32, fp16 and bf16 logits, fp32 arithmetic inside; int64 targets (PyTorch's).
//
//   c_ij   = x_ij, or with a softcap C > 0 (Gemma 2's final logits) C tanh(x_ij / C)
//   lse_i  = log sum_j exp(c_ij)
//   loss_i = lse_i - (1 - e) c_{i,t_i} - (e / vocab) sum_j c_ij + z lse_i^2   (e: label smoothing,
//                                                                              z: the z-loss weight)
//   dx_ij  = s_i (exp(c_ij - lse_i) (1 + 2 z lse_i) - (1 - e) [j == t_i] - e / vocab) dc_ij / dx_ij
//            (s_i: the upstream gradient; dc/dx = 1 - (c / C)^2 with a softcap, else 1)
//
// A row whose target is `ignore_index` has loss 0 and gradient 0; a target outside [0, vocab)
// otherwise gives that row a NaN loss and gradient (the device cannot throw; PyTorch asserts).
// Device pointers aligned to their element; the logits' rows move in 16-byte accesses over their
// 16-byte aligned middle (where dlogits lies as far from a 16-byte boundary as the logits). Outputs
// must not overlap inputs or each other, except that cross_entropy's dlogits may be the logits
// themselves (the gradient written over them, in place). Asynchronous on `stream`; rows == 0 does nothing. Throws
// cudalab::Error: invalid_argument for negative sizes, vocab == 0 with rows > 0, a null or
// misaligned pointer, overlapping outputs, label smoothing outside [0, 1], or a negative or
// non-finite softcap or z-loss weight; cuda when a launch fails.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

// The element types of the logits and their gradient (T below); any other fails to compile.
#define CUDALAB_CROSS_ENTROPY_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using CrossEntropyElements = CUDALAB_ELEMENT_LIST(CUDALAB_CROSS_ENTROPY_ELEMENTS);

struct CrossEntropyOptions {
  std::int64_t ignore_index = -100;  // PyTorch's default
  float label_smoothing = 0.0f;      // e above, in [0, 1]
  float z_loss = 0.0f;               // z above, >= 0 (PaLM's 1e-4)
  float softcap = 0.0f;              // C above; 0: none
};

// Per row: loss and lse (fp32, `rows` each), in one read of the logits. With `dlogits` non-null the
// gradient is written in the same call, scaled by *grad_scale (a device float: 1 / the rows not
// ignored for a mean, say; null: 1), so a training step reads the logits once for the loss and its
// gradient together; the re-read of each row comes from L2 while the rows in flight fit in it.
template <typename T, typename = RequireElement<T, CrossEntropyElements>>
void cross_entropy(const T* logits, const std::int64_t* target, std::int64_t rows, std::int64_t vocab, float* loss,
                   float* lse, T* dlogits = nullptr, const float* grad_scale = nullptr,
                   const CrossEntropyOptions& options = {}, cudaStream_t stream = nullptr);

// The gradient from the forward's lse: dlogits as above with s_i = dloss[i * dloss_stride] (device
// floats; stride 0: one value for every row, as a mean or sum reduction gives). One read of the
// logits, one write.
template <typename T, typename = RequireElement<T, CrossEntropyElements>>
void cross_entropy_backward(const T* logits, const std::int64_t* target, const float* lse, const float* dloss,
                            std::int64_t dloss_stride, std::int64_t rows, std::int64_t vocab, T* dlogits,
                            const CrossEntropyOptions& options = {}, cudaStream_t stream = nullptr);

// dlogits[i] *= *dloss for i < n, in place, dloss a device float: a gradient written by
// cross_entropy for an incoming gradient of 1, scaled once the real one is known. A dloss of exactly
// 1 (a loss's usual incoming gradient) returns without a pass over dlogits, so no caller has to read
// it on the host (a synchronization) to skip the pass.
template <typename T, typename = RequireElement<T, CrossEntropyElements>>
void cross_entropy_scale_gradient(T* dlogits, std::int64_t n, const float* dloss, cudaStream_t stream = nullptr);

}  // namespace cudalab
