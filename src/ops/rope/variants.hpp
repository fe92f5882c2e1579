// The RoPE ladder's argument struct and launchers (the formula: include/cudalab/rope.hpp). The
// library entry (rope.cpp) and the registry (register.cpp) fill the same struct; the backward is
// the forward with `sign` -1 (the opposite angles).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "cudalab/rope.hpp"

namespace cudalab::rope_variants {

template <typename T>
struct RopeArgs {
  using Element = T;
  const T* x = nullptr;
  T* y = nullptr;
  RopeShape shape;
  RopeTables tables;
  bool interleaved = false;
  std::int64_t position_offset = 0;
  float sign = 1.0f;          // 1: rotate by +angle (forward); -1: by -angle (backward)
  void* workspace = nullptr;  // the baseline's: workspace_bytes(shape)
};

// One pair per thread, element loads.
template <typename T>
void scalar(const RopeArgs<T>& args, cudaStream_t stream);
// 16 bytes of each half (half split) or of the pairs (interleaved) per thread where the rows allow,
// one pair per thread elsewhere.
template <typename T>
void vectorized(const RopeArgs<T>& args, cudaStream_t stream);
// A group of threads per token position, one 16-byte run of every head of it per thread: the angles
// read once per position. Rows the vectors do not fit take `vectorized`'s element path.
template <typename T>
void positions(const RopeArgs<T>& args, cudaStream_t stream);

// The baseline: as eager PyTorch (Hugging Face's apply_rotary_pos_emb) runs it, the rotated copy
// of x (rotate_half: the pairs' partners, one negated) written to a workspace of
// workspace_bytes(shape) bytes, then y = x cos + rotated sin in a second pass.
std::size_t workspace_bytes(const RopeShape& shape, std::size_t element_size);
template <typename T>
void unfused(const RopeArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::rope_variants
