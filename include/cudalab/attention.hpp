// Scaled dot-product attention, forward: O = softmax(scale * Q K^T [causal mask]) V and each query
// row's log-sum-exp L, for bf16 (__nv_bfloat16), fp16 (__half) and fp32 inputs. Arithmetic is fp32
// whatever the element type (the 16-bit paths round the probabilities to the element type before
// multiplying V, as FlashAttention does). Memory is O(seq): no seq x seq matrix is ever stored.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace cudalab {

// Q and O are dense row-major [batch, heads, seq, head_dim]; K and V [batch, kv_heads, seq,
// head_dim] (grouped-query attention: query head h reads kv head h / (heads / kv_heads); kv_heads
// == heads is ordinary multi-head attention); L is [batch, heads, seq] fp32.
struct AttentionDims {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
};

struct AttentionOptions {
  float scale = 0.0f;   // multiplies the scores; 0 means 1 / sqrt(head_dim)
  bool causal = false;  // query i attends to keys j <= i only
};

// O and L (L[r] = log sum_j exp(s_rj), natural log, of row r's scaled, masked scores s) on
// `stream`, asynchronously. Arrays are device memory aligned to their element type; bf16/fp16
// arrays at 16-byte aligned addresses with head_dim 64 or 128 take the tensor-core kernel (compute
// capability 8.0+), everything else the CUDA-core kernel. o and lse overlap no input. Any size of 0
// does nothing. Throws cudalab::Error: invalid_argument for negative sizes, heads not a multiple of
// kv_heads, a non-finite or negative scale, null, misaligned or overlapping arrays, or a shape no
// kernel takes (the message says why); cuda when a launch fails.
void attention_forward(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o,
                       float* lse, const AttentionDims& dims, const AttentionOptions& options = {},
                       cudaStream_t stream = nullptr);
void attention_forward(const __half* q, const __half* k, const __half* v, __half* o, float* lse,
                       const AttentionDims& dims, const AttentionOptions& options = {}, cudaStream_t stream = nullptr);
void attention_forward(const float* q, const float* k, const float* v, float* o, float* lse, const AttentionDims& dims,
                       const AttentionOptions& options = {}, cudaStream_t stream = nullptr);

}  // namespace cudalab
