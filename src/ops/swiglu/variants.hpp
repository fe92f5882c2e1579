// The gated-unit ladder's argument structs and launchers, SwiGLU and GeGLU by `activation` (the
// formulas: include/cudalab/swiglu.hpp).
// The library entry (swiglu.cpp), the registry (register.cpp) and the PyTorch binding fill the
// same structs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab::swiglu_variants {

// The gate's activation: silu(v) = v sigmoid(v) (SwiGLU), or GELU's tanh form
// 0.5 v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3))) (GeGLU).
enum class GluActivation { silu, gelu_tanh };

// The packed form, a fused projection's output [rows, 2 * width] (gate's columns, then up's):
// `pitch` != 0 makes the n elements rows of `width`, gate's and up's rows (and, backward, dgate's
// and dup's) `pitch` elements apart; y and dy stay dense. pitch 0: flat arrays of n.
struct GluRows {
  std::int64_t width = 0, pitch = 0;
};

template <typename T>
struct SwigluArgs {
  using Element = T;
  const T* gate = nullptr;
  const T* up = nullptr;
  T* y = nullptr;
  std::int64_t n = 0;
  void* workspace = nullptr;  // the baseline's: workspace_bytes(n)
  GluActivation activation = GluActivation::silu;
  GluRows rows;
};

template <typename T>
struct SwigluBackwardArgs {
  using Element = T;
  const T* gate = nullptr;
  const T* up = nullptr;
  const T* dy = nullptr;
  T* dgate = nullptr;
  T* dup = nullptr;
  std::int64_t n = 0;
  void* workspace = nullptr;  // the baseline's: workspace_bytes(n)
  GluActivation activation = GluActivation::silu;
  GluRows rows;
};

// One element per thread, a 256-thread block per 256 elements.
template <typename T>
void scalar(const SwigluArgs<T>& args, cudaStream_t stream);
template <typename T>
void backward_scalar(const SwigluBackwardArgs<T>& args, cudaStream_t stream);

// 16-byte accesses, four vectors of each input per thread, all loaded before the first is used
// (element accesses where an array is not 16-byte aligned).
template <typename T>
void vectorized(const SwigluArgs<T>& args, cudaStream_t stream);
template <typename T>
void backward_vectorized(const SwigluBackwardArgs<T>& args, cudaStream_t stream);

// The baseline: unfused passes as eager PyTorch runs them, each reading and writing memory, the
// intermediates in an fp32 workspace of workspace_bytes(n) (eager keeps them in the dtype, which
// moves fewer bytes but rounds twice): two passes forward, four backward.
inline std::size_t workspace_bytes(std::int64_t n) { return static_cast<std::size_t>(n) * sizeof(float); }
template <typename T>
void unfused(const SwigluArgs<T>& args, cudaStream_t stream);
template <typename T>
void backward_unfused(const SwigluBackwardArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::swiglu_variants
