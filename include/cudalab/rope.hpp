// Rotary position embedding (RoPE): each pair of a head's dimensions rotated by an angle that grows
// with the token's position, as Llama (pairs i and i + D/2: "half split", GPT-NeoX's and Hugging
// Face's rotate_half) or GPT-J (pairs 2i and 2i + 1: "interleaved") apply it to q and k:
//
//   y_a = x_a cos(p t_i) - x_b sin(p t_i),   y_b = x_b cos(p t_i) + x_a sin(p t_i)
//
// for pair i = (a, b) of a head at position p = position_offset + its index along seq. The angles
// come as two fp32 tables cos[p][i], sin[p][i] of head_dim / 2 columns (rows `table_stride` apart),
// so any frequency schedule works (Llama 3's scaled frequencies, NTK scaling, ...). The backward is
// the same rotation by the opposite angle (sin negated): dx from dy.
//
// x and y are [batch, seq, heads, head_dim] or any other order of the first three dimensions, given
// by their strides in elements (batch_stride, seq_stride, heads_stride); head_dim is contiguous and
// even. fp32, fp16 and bf16 with fp32 arithmetic inside, each result rounded once. y may be x (in
// place); otherwise they must not overlap. Asynchronous on `stream`; an empty tensor does nothing.
// Throws cudalab::Error (invalid_argument) for negative sizes, an odd head_dim, strides that do not
// fit the sizes, a null or misaligned pointer, tables too short for position_offset + seq, or y
// overlapping x without being it.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

#define CUDALAB_ROPE_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using RopeElements = CUDALAB_ELEMENT_LIST(CUDALAB_ROPE_ELEMENTS);

enum class RopePairs { half_split, interleaved };

// A tensor [batch, seq, heads, head_dim] by its sizes and the strides of its first three
// dimensions (elements); the last is contiguous.
struct RopeShape {
  std::int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  std::int64_t batch_stride = 0, seq_stride = 0, heads_stride = 0;
};

// The angles: cos and sin tables of `positions` rows of head_dim / 2 fp32 values, `table_stride`
// apart (head_dim / 2 when dense); row p holds position p.
struct RopeTables {
  const float* cos = nullptr;
  const float* sin = nullptr;
  std::int64_t positions = 0, table_stride = 0;
};

template <typename T, typename = RequireElement<T, RopeElements>>
void rope(const T* x, T* y, const RopeShape& shape, const RopeTables& tables, RopePairs pairs = RopePairs::half_split,
          std::int64_t position_offset = 0, cudaStream_t stream = nullptr);

// dx = the rotation of dy by the opposite angles.
template <typename T, typename = RequireElement<T, RopeElements>>
void rope_backward(const T* dy, T* dx, const RopeShape& shape, const RopeTables& tables,
                   RopePairs pairs = RopePairs::half_split, std::int64_t position_offset = 0,
                   cudaStream_t stream = nullptr);

}  // namespace cudalab
