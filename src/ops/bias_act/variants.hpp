// The bias + activation ladders, forward and backward. Every launcher is templated on the element
// type (float, __half, __nv_bfloat16), takes the op's argument struct and enqueues on `stream`; the
// library entry (bias_act.cpp) and the registry (register.cpp) fill the same structs. Tensors are
// row-major [rows, features]; arithmetic is fp32 inside. Launchers accept any shape (rows or
// features 0: nothing to do, except that the backward writes dbias = 0 when rows == 0) and any
// pointer aligned to its element: a kernel that needs 16-byte rows falls back to one that does not.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/activations.hpp"

namespace cudalab::bias_act_variants {

// y = act(x + bias). Only the unfused baseline uses the workspace: the intermediate x + bias,
// rows * features elements of T (unfused_workspace_bytes).
template <typename T>
struct BiasActArgs {
  using Element = T;
  const T* x = nullptr;
  const T* bias = nullptr;
  T* y = nullptr;
  std::int64_t rows = 0;
  std::int64_t features = 0;
  Activation activation = Activation::relu;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// dx = dy * act'(x + bias), dbias = sum of dx over the rows. The tile kernels' workspace holds
// their fp32 column partial sums (backward_workspace_bytes).
template <typename T>
struct BiasActBackwardArgs {
  using Element = T;
  const T* x = nullptr;
  const T* bias = nullptr;
  const T* dy = nullptr;
  T* dx = nullptr;
  T* dbias = nullptr;
  std::int64_t rows = 0;
  std::int64_t features = 0;
  Activation activation = Activation::relu;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// ---- forward --------------------------------------------------------------------------------------

// The tutorial's fusedBiasReluKernel / fusedBiasGeluKernel as written: block 256, grid (rows,
// ceil(features / 256)), one element per thread, a 32-bit index, GELU through tanhf. ReLU and GELU
// (tanh) only: the tutorial writes no erf GELU. tutorial_limits says which shapes its grid and
// index reach.
template <typename T>
void tutorial(const BiasActArgs<T>& args, cudaStream_t stream);
// "" when the tutorial's kernels run this problem, else why not.
const char* tutorial_limits(std::int64_t rows, std::int64_t features, Activation activation);

// The unfused baseline (claim C32): x + bias into the workspace, then act over it, two launches of
// the `vectorized` kernel; the intermediate costs a write and a read of the whole tensor.
template <typename T>
void unfused(const BiasActArgs<T>& args, cudaStream_t stream);
std::size_t unfused_workspace_bytes(std::int64_t rows, std::int64_t features, std::size_t element_size);

// Fused, one resident grid striding over the flat tensor in 16-byte vectors; the bias vector of
// each x vector is reloaded (an L1 hit), or gathered element by element when rows are not 16-byte
// aligned (features not a multiple of 16 / sizeof(T)).
template <typename T>
void vectorized(const BiasActArgs<T>& args, cudaStream_t stream);

// Fused, 2-D tiles of 32 rows by 32 16-byte column vectors, one tile per block in address order;
// each thread loads its bias vector once and keeps 4 rows' vectors in flight. Rows that are not
// 16-byte aligned take `vectorized`.
template <typename T>
void tiled(const BiasActArgs<T>& args, cudaStream_t stream);

// ---- backward -------------------------------------------------------------------------------------

// dx one element per thread, then dbias by one thread per column looping over the rows of dx (the
// values it wrote, rounded to T, as a separate dx.sum(0) reads them). No workspace.
template <typename T>
void naive_backward(const BiasActBackwardArgs<T>& args, cudaStream_t stream);

// One pass over x and dy: 2-D tiles of 128 rows by 32 16-byte column vectors compute dx and each
// block's fp32 column sums, written to the workspace; a second small kernel adds each column's
// partial sums in a fixed order. Rows that are not 16-byte aligned run the same kernels one element
// per lane.
template <typename T>
void fused_backward(const BiasActBackwardArgs<T>& args, cudaStream_t stream);

// The baseline: the same tile kernels as two passes, dx written, then read back and summed by
// column (the passes of PyTorch's act_backward and dx.sum(0)).
template <typename T>
void unfused_backward(const BiasActBackwardArgs<T>& args, cudaStream_t stream);

// The workspace of fused_backward and unfused_backward: one fp32 partial per column per block row.
std::size_t backward_workspace_bytes(std::int64_t rows, std::int64_t features);

// out[j] = the sum over the rows of m[., j] in fp32, rounded once to T (zeros for no rows): the
// baseline's second pass, and a Linear's bias gradient. `partials` holds
// backward_workspace_bytes(rows, features).
template <typename T>
void column_sums(const T* m, T* out, std::int64_t rows, std::int64_t features, float* partials, cudaStream_t stream);

}  // namespace cudalab::bias_act_variants
