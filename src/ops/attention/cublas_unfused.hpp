// The attention op's vendor-library baseline, `cublas`: attention as a user writes it with cuBLAS
// before fused attention, unfused and keeping the whole score matrix (O(seq^2) memory):
//   S = scale Q K^T   cublasGemmStridedBatchedEx, inputs in the dtype, S in fp32, CUBLAS_COMPUTE_32F
//                     (for f32 that is FP32 FMA on CUDA cores: no TF32; for bf16/f16, tensor cores
//                     with fp32 accumulation);
//   P = softmax(S)    the naive rung's row softmax (scores_softmax.cuh), causal mask and L included;
//                     P stays fp32 (in place over S) for f32 and is rounded to the dtype, into a
//                     second workspace region, for bf16/f16, as the 16-bit rungs round it;
//   O = P V           cublasGemmStridedBatchedEx, P and V in the dtype, CUBLAS_COMPUTE_32F.
// Grouped-query attention costs no copies: the query heads that share kv head j are contiguous in
// Q ([batch, heads, seq, head_dim], heads = kv_heads * group), so each (batch, kv head) is one GEMM
// with group * seq rows against its K (or V), strided over batch * kv_heads; the softmax finds a
// row's query as row % seq. Harness side only: the installable library does not link cuBLAS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {

// S in fp32 (batch * heads * seq^2 floats), then, for 16-bit inputs (element_size < 4), P in the
// input type (batch * heads * seq^2 elements); SIZE_MAX when that overflows 64 bits.
std::size_t cublas_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq, std::size_t element_size);

// "" when cuBLAS's int sizes (m, n, k, leading dimensions, batch count; strides are 64-bit), the
// softmax's grid and the workspace's size can express the problem, else why not.
std::string cublas_limits(const AttentionShape& shape);

// args.workspace: cublas_workspace_bytes(batch, heads, seq, sizeof(T)) bytes.
template <typename T>
void cublas_unfused(const AttentionArgs<T>& args, cudaStream_t stream);

// The backward's baseline (cublas_backward.cu): S and dP in fp32, then P and dS in the input type
// when it is 16-bit; SIZE_MAX when that overflows.
std::size_t cublas_backward_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                                            std::size_t element_size);
std::string cublas_backward_limits(const AttentionShape& shape);
template <typename T>
void cublas_backward(const AttentionBackwardArgs<T>& args, cudaStream_t stream);

// attention_decode's baseline, the same three steps over each (sequence, kv head): S = scale Q K^T
// against the whole cache (its group's heads times the new tokens as one GEMM's rows), the softmax
// over each sequence's first lengths[b] keys (causal aligned bottom-right), O = P V. S in fp32,
// then P in the input type for 16-bit inputs: cublas_decode_workspace_bytes.
std::size_t cublas_decode_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t tokens,
                                          std::int64_t cache, std::size_t element_size);
std::string cublas_decode_limits(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads, std::int64_t tokens,
                                 std::int64_t cache, std::int64_t head_dim);
template <typename T>
void cublas_decode(const DecodeArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::attention_variants
