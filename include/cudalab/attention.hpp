// Scaled dot-product attention: the forward, O = softmax(scale * Q K^T [causal, window mask]) V and
// each query row's log-sum-exp L, and its backward, dQ, dK and dV from dO and the forward's O and
// L; for bf16 (__nv_bfloat16), fp16 (__half) and fp32 inputs. Arithmetic is fp32 whatever the
// element type (the 16-bit paths round the probabilities to the element type before multiplying V,
// and the backward rounds P and dS before the products that take them, as FlashAttention does). The
// forward's memory is O(seq): no seq x seq matrix is ever stored; the backward's is O(seq) on its
// tensor-core path and O(seq^2) on its fallback (attention_backward_workspace_bytes).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"
#include "cudalab/elements.hpp"

namespace cudalab {

// The element types of Q, K, V, O and their gradients (T below); any other fails to compile.
#define CUDALAB_ATTENTION_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using AttentionElements = CUDALAB_ELEMENT_LIST(CUDALAB_ATTENTION_ELEMENTS);

// Q and O are [batch, heads, seq, head_dim]; K and V [batch, kv_heads, seq, head_dim]
// (grouped-query attention: query head h reads kv head h / (heads / kv_heads); kv_heads == heads is
// ordinary multi-head attention), dense row-major unless AttentionOptions::layout says where their
// rows lie; L is dense [batch, heads, seq] fp32.
struct AttentionDims {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
};

// Where one array's rows lie, in elements: row (b, h, i) starts at b * batch + h * head + i * row
// and holds head_dim contiguous elements. All 0 (the default): dense [batch, heads, seq, head_dim]
// (kv_heads for k, v, dk, dv). A [batch, seq, heads, head_dim] array has {seq * heads * head_dim,
// head_dim, heads * head_dim}; q, k and v packed in one [batch, seq, heads + 2 kv_heads, head_dim]
// array (a fused projection's output) have row stride (heads + 2 kv_heads) * head_dim, head stride
// head_dim, and k and v start heads and heads + kv_heads head_dims after q.
struct AttentionStrides {
  std::int64_t batch = 0, head = 0, row = 0;
};
// The forward reads q, k, v and o's strides; the backward all eight.
struct AttentionLayout {
  AttentionStrides q, k, v, o, d_o, dq, dk, dv;
};

struct AttentionOptions {
  float scale = 0.0f;      // multiplies the scores; 0 means 1 / sqrt(head_dim)
  bool causal = false;     // query i attends to keys j <= i only
  AttentionLayout layout;  // dense by default
  // A sliding window, as FlashAttention's window_size (left, right): query i attends to keys
  // i - window_left .. i + window_right only; -1 leaves a side unbounded. Mistral's window of W
  // keys is causal with window_left W - 1. The forward and backward skip the key tiles outside
  // the window, so their work is O(seq * window). Decode applies it about each query's position.
  std::int64_t window_left = -1, window_right = -1;
  // The backward's dQ summed in a fixed order, so that a call gives the same bits every time (dK and
  // dV always do): on Hopper's tensor-core kernel, each key block adds its part of a query tile
  // once the blocks due before it have; the CUDA-core fallback has no atomics. Not on the mma.sync
  // kernel of other GPUs or with a variable-length batch. The forward ignores it.
  bool deterministic = false;
};

// O and L (L[r] = log sum_j exp(s_rj), natural log, of row r's scaled, masked scores s) on
// `stream`, asynchronously. Arrays are device memory aligned to their element type; bf16/fp16
// arrays at 16-byte aligned addresses take the tensor-core kernel with head_dim 64 or 128 (compute
// capability 8.0+) and, on compute capability 9.0 with sm_90a code, any head_dim that is a multiple
// of 8 up to 256; everything else the CUDA-core kernel. o and lse overlap no input. Any size of 0
// does nothing. Throws cudalab::Error: invalid_argument for negative sizes, heads not a multiple of
// kv_heads, a non-finite or negative scale, a window side below -1, null, misaligned or
// overlapping arrays, or a shape no kernel takes (the message says why); cuda when a launch fails.
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_forward(const T* q, const T* k, const T* v, T* o, float* lse, const AttentionDims& dims,
                       const AttentionOptions& options = {}, cudaStream_t stream = nullptr);

// Scratch bytes attention_backward takes for `dims` and `dtype` (f32, bf16 or f16) on the current
// GPU, on the path it takes there (`deterministic` as AttentionOptions': the Hopper kernel's
// counters, 8 * batch * heads * ceil(seq / 64) bytes more):
//   - bf16/fp16 with head_dim 64 or 128 (on compute capability 9.0 with sm_90a code, any multiple
//     of 8 up to 128), compute capability 8.0+ and `aligned` (q, k, v, o, d_o, dq, dk and dv all at
//     16-byte aligned addresses): the tensor-core kernel (FlashAttention-2's backward; on wgmma and
//     TMA on compute capability 9.0, on mma.sync elsewhere), which needs dQ's fp32 accumulator and
//     each row's D = rowsum(dO o O): 4 * batch * heads * seq * (w + 1) bytes, O(seq) memory, w
//     being head_dim rounded up to 64 or 128;
//   - everything else: the CUDA-core fallback, which materializes P and dS of every (batch, head)
//     in fp32: 8 * batch * heads * seq^2 bytes, O(seq^2) memory (8 GiB at 4 x 16 x 4096).
// 0 when a size is 0. Throws cudalab::Error: invalid_argument for another dtype, negative sizes,
// heads not a multiple of kv_heads, sizes whose products overflow 64 bits, or a shape no kernel
// takes (the message says why).
std::size_t attention_backward_workspace_bytes(const AttentionDims& dims, DType dtype, bool aligned = true,
                                               bool deterministic = false);

// The gradients of O (L's gradient is not taken) with respect to Q, K and V, given the forward's O
// and L (as attention_forward returns them for these q, k, v, dims and options) and O's gradient
// d_o [batch, heads, seq, head_dim]: dq like q, dk and dv like k and v, each kv head's dk and dv
// summed over the query heads that read it. The scale and mask are the forward's (scale 0 = 1 /
// sqrt(head_dim)). Asynchronous on `stream`. Arrays are device memory aligned to their element;
// dq, dk and dv overlap no other array. The kernel and its scratch are the ones
// attention_backward_workspace_bytes describes; the tensor-core kernels add dq up in fp32 by
// atomics (mma.sync) or L2 reductions (wgmma), so dq may differ in the last bits from run to run
// (dk and dv do not). Any size of 0 does nothing. Throws cudalab::Error: invalid_argument for
// negative sizes, heads not a multiple of kv_heads, a non-finite or negative scale, a window side
// below -1, null, misaligned or overlapping arrays, too small a workspace, or a shape no kernel
// takes (the message says why); cuda when a launch fails. This one takes the scratch from the
// stream-ordered allocator (cudaMallocAsync) and releases it on the stream.
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o, T* dq, T* dk,
                        T* dv, const AttentionDims& dims, const AttentionOptions& options = {},
                        cudaStream_t stream = nullptr);
// The same with the caller's scratch: `workspace` holds at least attention_backward_workspace_bytes(
// dims, dtype, aligned) bytes of device memory, 16-byte aligned (null when that is 0), which the
// call may use until its work on the stream is done.
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o, T* dq, T* dk,
                        T* dv, const AttentionDims& dims, const AttentionOptions& options, void* workspace,
                        std::size_t workspace_bytes, cudaStream_t stream = nullptr);

// Variable-length batches, as FlashAttention's varlen API takes them: `sequences` sequences of
// different lengths packed along the rows, with no padding. q and o are [total_q, heads, head_dim]
// and k and v [total_k, kv_heads, head_dim], dense unless AttentionOptions::layout gives their head
// and row strides (its batch strides are ignored); lse is dense [heads, total_q] fp32. Sequence b's
// queries are rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1 and its keys rows cu_seqlens_k[b] ..
// cu_seqlens_k[b + 1] - 1: device int32 arrays of sequences + 1 entries, from 0 up to total_q and
// total_k, no sequence longer than max_seqlen_q queries and max_seqlen_k keys (the launch's size;
// rows outside these bounds are not computed). A sequence's queries are its last positions: query i
// sits at position i + keys - queries (FlashAttention's bottom-right alignment), and the causal
// mask and a sliding window apply about that position; a query that sees no key gets O = 0 and
// L = -inf. Runs on the Hopper tensor-core kernels only: bf16 or fp16, head_dim a multiple of 8 up
// to 256 (the backward: up to 128), compute capability 9.0 with sm_90a code, 16-byte aligned arrays and strides that
// are multiples of 8 elements.
struct AttentionVarlenDims {
  std::int64_t sequences = 0, heads = 0, kv_heads = 0, total_q = 0, total_k = 0;
  std::int64_t max_seqlen_q = 0, max_seqlen_k = 0, head_dim = 0;
};

// O and L of a variable-length batch on `stream`, asynchronously. Throws cudalab::Error:
// invalid_argument for negative sizes, heads not a multiple of kv_heads, sizes past the kernel's
// 32-bit limits, a shape, dtype or GPU the Hopper kernel does not run, null, misaligned or
// overlapping arrays, a non-finite or negative scale, a window side below -1; cuda when a launch
// fails.
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_forward_varlen(const T* q, const T* k, const T* v, const std::int32_t* cu_seqlens_q,
                              const std::int32_t* cu_seqlens_k, T* o, float* lse, const AttentionVarlenDims& dims,
                              const AttentionOptions& options = {}, cudaStream_t stream = nullptr);

// Scratch bytes attention_backward_varlen takes: dQ's fp32 accumulator and each query row's D,
// 4 * heads * total_q * (head_dim + 1). Throws cudalab::Error: invalid_argument as
// attention_forward_varlen's size checks do.
std::size_t attention_backward_varlen_workspace_bytes(const AttentionVarlenDims& dims, DType dtype);

// dQ, dK and dV of a variable-length batch, given the forward's O and L and O's gradient d_o (like
// q; dq like q, dk and dv like k and v, where options.layout says). Keys no query sees get dK = dV
// = 0. dq's sums are added in fp32 in L2 in no fixed order, as attention_backward's (and
// options.deterministic is refused). Throws as
// attention_forward_varlen does, and for too small a workspace. This one takes the scratch from
// the stream-ordered allocator.
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_backward_varlen(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o,
                               const std::int32_t* cu_seqlens_q, const std::int32_t* cu_seqlens_k, T* dq, T* dk, T* dv,
                               const AttentionVarlenDims& dims, const AttentionOptions& options = {},
                               cudaStream_t stream = nullptr);
// The same with the caller's scratch (attention_backward_varlen_workspace_bytes, 16-byte aligned).
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_backward_varlen(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o,
                               const std::int32_t* cu_seqlens_q, const std::int32_t* cu_seqlens_k, T* dq, T* dk, T* dv,
                               const AttentionVarlenDims& dims, const AttentionOptions& options, void* workspace,
                               std::size_t workspace_bytes, cudaStream_t stream = nullptr);

// Decode attention: the newest `tokens` queries of each sequence against its key-value cache, as a
// model generating text calls it each step. q and o are dense [batch, heads, tokens, head_dim];
// k_cache and v_cache dense [batch, kv_heads, cache, head_dim] (kv head h / (heads / kv_heads) for
// query head h); lengths is device int32 [batch]: sequence b's keys are rows 0 .. lengths[b] - 1
// of its cache (a value past cache reads as cache), the new tokens' own keys included, so
// lengths[b] >= tokens. Query t of sequence b sits at position lengths[b] - tokens + t and, when
// options.causal, sees the keys up to it, and with a sliding window only the keys within it of that
// position (a query that sees no key gets O = 0 and L = -inf). lse
// is [batch, heads, tokens] fp32, or null when not wanted. options.layout must be the default.
struct AttentionDecodeDims {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, tokens = 0, cache = 0, head_dim = 0;
};

// O and L on `stream`, asynchronously. bf16/fp16 arrays at 16-byte aligned addresses with head_dim
// 64 or 128 and (heads / kv_heads) * tokens <= 16 take the split-KV tensor-core kernel (compute
// capability 8.0+: each kv head's queries share one read of its keys and values, which are split
// over blocks that fill the GPU and combined by their log-sum-exps; this form takes the splits'
// scratch from the stream-ordered allocator); everything else (fp32, head_dim up to 256) a
// CUDA-core kernel that reads the cache once per query row. Any size of 0 does nothing. Throws
// cudalab::Error: invalid_argument for negative sizes, heads not a multiple of kv_heads, tokens
// past cache, a non-finite or negative scale, a window side below -1, a layout, null, misaligned or
// overlapping arrays, head_dim past 256; cuda when a launch fails.
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_decode(const T* q, const T* k_cache, const T* v_cache, const std::int32_t* lengths, T* o, float* lse,
                      const AttentionDecodeDims& dims, const AttentionOptions& options = {},
                      cudaStream_t stream = nullptr);
// The same with the caller's scratch: `workspace` holds at least attention_decode_workspace_bytes(
// dims, dtype) bytes of device memory, 16-byte aligned (null when that is 0), which the call may
// use until its work on the stream is done. The form to capture in a CUDA graph with a caching
// allocator's memory.
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_decode(const T* q, const T* k_cache, const T* v_cache, const std::int32_t* lengths, T* o, float* lse,
                      const AttentionDecodeDims& dims, const AttentionOptions& options, void* workspace,
                      std::size_t workspace_bytes, cudaStream_t stream = nullptr);

// Scratch bytes attention_decode (page_size 0) or attention_decode_paged (pages of page_size
// keys) takes for `dims` and `dtype` (f32, bf16 or f16) on the current GPU: the split-KV kernel's
// partial outputs, 4 * splits * batch * heads * tokens * (head_dim + 1) bytes where it runs, else
// 0. Throws cudalab::Error: invalid_argument for another dtype or negative sizes.
std::size_t attention_decode_workspace_bytes(const AttentionDecodeDims& dims, DType dtype, std::int64_t page_size = 0);

// A paged cache, as vLLM and FlashAttention's key-value cache API keep one: k_pages and v_pages
// hold `pages` pages of [kv_heads, page_size, head_dim] each, and block_table (device int32
// [batch, cache / page_size]) names the pages of each sequence in order: key j of sequence b lies
// in page block_table[b][j / page_size] at row j % page_size. dims.cache is the most keys a
// sequence may hold, a multiple of page_size. Every entry of block_table that the lengths reach
// must be below `pages`.
struct AttentionDecodePages {
  const std::int32_t* block_table = nullptr;
  std::int64_t page_size = 0, pages = 0;
};

// attention_decode over a paged cache. The split-KV tensor-core kernel takes pages of a multiple
// of 64 keys (its tiles); other page sizes run the CUDA-core kernel. Throws as attention_decode
// does, and for a page_size that is not positive or does not divide dims.cache.
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_decode_paged(const T* q, const T* k_pages, const T* v_pages, const AttentionDecodePages& pages,
                            const std::int32_t* lengths, T* o, float* lse, const AttentionDecodeDims& dims,
                            const AttentionOptions& options = {}, cudaStream_t stream = nullptr);
// The same with the caller's scratch, as attention_decode's.
template <typename T, typename = RequireElement<T, AttentionElements>>
void attention_decode_paged(const T* q, const T* k_pages, const T* v_pages, const AttentionDecodePages& pages,
                            const std::int32_t* lengths, T* o, float* lse, const AttentionDecodeDims& dims,
                            const AttentionOptions& options, void* workspace, std::size_t workspace_bytes,
                            cudaStream_t stream = nullptr);

}  // namespace cudalab
