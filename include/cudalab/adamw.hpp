// One step of AdamW (Loshchilov and Hutter's decoupled weight decay, as torch.optim.AdamW computes
// it) over a list of parameter tensors: for each element, with t the step count,
//
//   p = p (1 - lr wd)
//   m = b1 m + (1 - b1) g,          v = b2 v + (1 - b2) g^2
//   p = p - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//
// Parameters, gradients and both moments share one element type (fp32, bf16 or fp16, as torch keeps
// the moments in the parameters' dtype), with fp32 arithmetic inside and each stored value rounded
// once. The tensors of a call are updated by as few launches as their count allows (up to 48 a
// launch); 16-byte aligned tensors of a multiple of 16 bytes move in 16-byte accesses. Asynchronous
// on `stream`. Throws cudalab::Error (invalid_argument) for a negative size or count, a null or
// misaligned pointer, a step below 1, hyperparameters outside their ranges (lr, eps, weight decay
// >= 0; betas in [0, 1)), or arrays of one tensor that overlap.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

#define CUDALAB_ADAMW_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using AdamWElements = CUDALAB_ELEMENT_LIST(CUDALAB_ADAMW_ELEMENTS);

struct AdamWHyperparameters {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 1e-2f;
  std::int64_t step = 1;  // t, counted from 1 at the first step
};

// One parameter tensor: n elements of each of its four device arrays.
template <typename T>
struct AdamWTensor {
  T* param = nullptr;
  const T* grad = nullptr;
  T* exp_avg = nullptr;
  T* exp_avg_sq = nullptr;
  std::int64_t n = 0;
};

// `tensors` is a host array of `count` tensors.
template <typename T, typename = RequireElement<T, AdamWElements>>
void adamw(const AdamWTensor<T>* tensors, std::int64_t count, const AdamWHyperparameters& hyper,
           cudaStream_t stream = nullptr);

// Mixed precision: a 16-bit parameter with an fp32 master copy and fp32 moments. The step runs on
// the master weights as above (the gradient widened from T) and writes the parameter as the new
// master rounded once to T, so small updates accumulate in the master where T would drop them.
#define CUDALAB_ADAMW_MASTER_ELEMENTS(X, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using AdamWMasterElements = CUDALAB_ELEMENT_LIST(CUDALAB_ADAMW_MASTER_ELEMENTS);

template <typename T>
struct AdamWMasterTensor {
  T* param = nullptr;
  const T* grad = nullptr;
  float* master = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  std::int64_t n = 0;
};

template <typename T, typename = RequireElement<T, AdamWMasterElements>>
void adamw_master(const AdamWMasterTensor<T>* tensors, std::int64_t count, const AdamWHyperparameters& hyper,
                  cudaStream_t stream = nullptr);

}  // namespace cudalab
