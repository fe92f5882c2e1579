// The cuBLAS baseline (see cublas_unfused.hpp). cuBLAS is column-major: a row-major matrix is its
// transpose, so row-major C = A B is computed as column-major C^T = B^T A^T, B passed first.
#include "ops/attention/cublas_unfused.hpp"

#include <climits>
#include <limits>
#include <type_traits>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cudalab/error.hpp"
#include "ops/attention/scores_softmax.cuh"
#include "ops/gemm/cublas_gemm.hpp"

namespace cudalab::attention_variants {
namespace {

using gemm_variants::check_cublas;
using gemm_variants::cublas_handle;
using gemm_variants::cuda_data_type;

// a * b > INT_MAX, for a, b >= 0, without overflowing.
bool product_above_int(std::int64_t a, std::int64_t b) { return a != 0 && b > INT_MAX / a; }

// P's place in the workspace: over S for f32, after S's `scores` floats for bf16/fp16.
template <typename T>
T* probabilities_after(float* scores, std::int64_t count) {
  if constexpr (std::is_same_v<T, float>) {
    return scores;
  } else {
    return reinterpret_cast<T*>(scores + count);
  }
}

// The two batched products around the softmax: `count` GEMMs, one per (batch, kv head), each of
// `rows` query rows (the group's heads, contiguous in Q, O, S and P) against `keys` rows of K and
// V. S = scale Q K^T into fp32, then softmax() makes P, then O = P V. Sizes within cuBLAS's int.
template <typename T, typename Softmax>
void unfused_products(const T* q, const T* k, const T* v, T* o, float* scores, const T* probabilities,
                      std::int64_t rows, std::int64_t keys, std::int64_t head_dim, std::int64_t count, float scale,
                      cudaStream_t stream, const Softmax& softmax) {
  constexpr cudaDataType_t type = cuda_data_type<T>();
  const int m = static_cast<int>(rows), n = static_cast<int>(keys), d = static_cast<int>(head_dim);
  const long long kv_stride = keys * head_dim, query_stride = rows * head_dim, score_stride = rows * keys;
  const float one = 1.0f, zero = 0.0f;
  cublasHandle_t handle = cublas_handle(stream);
  // S (rows x keys): column-major S^T = K Q^T, K (column-major head_dim x keys) transposed.
  check_cublas(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, d, &scale, k, type, d, kv_stride, q,
                                          type, d, query_stride, &zero, scores, CUDA_R_32F, n, score_stride,
                                          static_cast<int>(count), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx (S = scale Q K^T)");
  softmax();
  // O (rows x head_dim): column-major O^T = V^T P^T.
  check_cublas(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, d, m, n, &one, v, type, d, kv_stride,
                                          probabilities, type, n, score_stride, &zero, o, type, d, query_stride,
                                          static_cast<int>(count), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx (O = P V)");
}

}  // namespace

std::size_t cublas_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq, std::size_t element_size) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  const std::size_t scores = naive_workspace_bytes(batch, heads, seq);
  if (element_size >= sizeof(float) || scores == kMax) return scores;
  const std::size_t probabilities = scores / sizeof(float) * element_size;
  return scores > kMax - probabilities ? kMax : scores + probabilities;
}

std::string cublas_limits(const AttentionShape& shape) {
  const std::int64_t group = shape.kv_heads > 0 ? shape.heads / shape.kv_heads : 1;
  if (shape.head_dim > INT_MAX) return "head_dim above 2^31 - 1 (cuBLAS's k and leading dimensions are int)";
  if (product_above_int(group, shape.seq))
    return "heads / kv_heads * seq above 2^31 - 1 (a (batch, kv head)'s query rows are one GEMM's int n in cuBLAS)";
  if (product_above_int(shape.batch, shape.kv_heads))
    return "batch * kv_heads above 2^31 - 1 (cuBLAS's batch count is an int)";
  // Both factors are below 2^31 now, so the product cannot overflow.
  const std::string why = attention_softmax_limits((shape.batch * shape.kv_heads) * (group * shape.seq));
  if (!why.empty()) return why;
  if (cublas_workspace_bytes(shape.batch, shape.heads, shape.seq, shape.element_size) ==
      std::numeric_limits<std::size_t>::max())
    return "the workspace, batch * heads * seq^2 scores, overflows 64 bits";
  return "";
}

template <typename T>
void cublas_unfused(const AttentionArgs<T>& args, cudaStream_t stream) {
  if (!ready_to_launch("attention cublas", cublas_limits(shape_of(args, 0)), args,
                       cublas_workspace_bytes(args.batch, args.heads, args.seq, sizeof(T))))
    return;
  auto* scores = static_cast<float*>(args.workspace);
  const std::int64_t all_rows = args.batch * args.heads * args.seq;
  T* probabilities = probabilities_after<T>(scores, all_rows * args.seq);
  unfused_products(args.q, args.k, args.v, args.o, scores, probabilities, args.heads / args.kv_heads * args.seq,
                   args.seq, args.head_dim, args.batch * args.kv_heads, args.scale, stream, [&] {
                     attention_softmax(static_cast<const float*>(scores), probabilities, args.lse, all_rows, args.seq,
                                       key_window(args), stream);
                   });
}

template void cublas_unfused<float>(const AttentionArgs<float>&, cudaStream_t);
template void cublas_unfused<__half>(const AttentionArgs<__half>&, cudaStream_t);
template void cublas_unfused<__nv_bfloat16>(const AttentionArgs<__nv_bfloat16>&, cudaStream_t);

std::size_t cublas_decode_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t tokens,
                                          std::int64_t cache, std::size_t element_size) {
  const auto scores = static_cast<std::size_t>(batch * heads * tokens * cache);
  return scores * sizeof(float) + (element_size < sizeof(float) ? scores * element_size : 0);
}

std::string cublas_decode_limits(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads, std::int64_t tokens,
                                 std::int64_t cache, std::int64_t head_dim) {
  const std::int64_t group = kv_heads > 0 ? heads / kv_heads : 1;
  if (head_dim > INT_MAX || cache > INT_MAX) return "head_dim and cache must be below 2^31 (cuBLAS's int sizes)";
  if (product_above_int(group, tokens) || product_above_int(batch, kv_heads))
    return "(heads / kv_heads) * tokens and batch * kv_heads must be below 2^31 (cuBLAS's int sizes)";
  return attention_softmax_limits(batch * heads * tokens);
}

template <typename T>
void cublas_decode(const DecodeArgs<T>& args, cudaStream_t stream) {
  const std::string why =
      cublas_decode_limits(args.batch, args.heads, args.kv_heads, args.tokens, args.cache, args.head_dim);
  CUDALAB_REQUIRE(why.empty(), "attention_decode cublas: " + why);
  const std::int64_t all_rows = args.batch * args.heads * args.tokens;
  if (all_rows == 0) return;
  auto* scores = static_cast<float*>(
      workspace_of(args, cublas_decode_workspace_bytes(args.batch, args.heads, args.tokens, args.cache, sizeof(T)),
                   "attention_decode cublas"));
  T* probabilities = probabilities_after<T>(scores, all_rows * args.cache);
  unfused_products(args.q, args.k, args.v, args.o, scores, probabilities, args.heads / args.kv_heads * args.tokens,
                   args.cache, args.head_dim, args.batch * args.kv_heads, args.scale, stream, [&] {
                     attention_decode_softmax(static_cast<const float*>(scores), probabilities, args.lse, all_rows,
                                              args.cache, args.tokens, args.heads, args.lengths,
                                              key_window(args.cache, args.causal, args.window_left, args.window_right),
                                              stream);
                   });
}

template void cublas_decode<float>(const DecodeArgs<float>&, cudaStream_t);
template void cublas_decode<__half>(const DecodeArgs<__half>&, cudaStream_t);
template void cublas_decode<__nv_bfloat16>(const DecodeArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::attention_variants
