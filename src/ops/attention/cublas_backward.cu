// The attention backward's vendor-library baseline, `cublas` (see cublas_unfused.hpp for the
// forward's): the gradients as a user writes them with cuBLAS, unfused, keeping seq x seq matrices.
//   S = scale Q K^T, dP = dO V^T   cublasGemmStridedBatchedEx into fp32 (CUBLAS_COMPUTE_32F);
//   P, dS                           a block per row: D_i = dO_i . O_i, then P = exp(S - L_i) (0
//                                   for keys the row does not see) and dS = P (dP - D_i), in
//                                   place for f32, rounded to the 16-bit input type into two more
//                                   regions for bf16/f16 (the GEMMs that follow take them in that
//                                   type);
//   dV = P^T dO, dK = scale dS^T Q  one GEMM per (batch, kv head) over its group * seq query rows,
//                                   which sums the group's query heads with no extra pass;
//   dQ = scale dS K.
// cuBLAS is column-major: a row-major matrix is its transpose, as in the forward.
#include <climits>
#include <limits>
#include <type_traits>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/cublas_unfused.hpp"
#include "ops/attention/scores_softmax.cuh"
#include "ops/gemm/cublas_gemm.hpp"
#include "ops/softmax/softmax.cuh"

namespace cudalab::attention_variants {
namespace {

using gemm_variants::check_cublas;
using gemm_variants::cublas_handle;
using gemm_variants::cuda_data_type;

// Row `blockIdx.x` of every (batch, head)'s rows: P and dS from S, dP, L and D_i.
template <typename T>
__global__ void __launch_bounds__(kSoftmaxThreads)
    attention_backward_probabilities_kernel(const float* scores, const float* dp, const T* __restrict__ o,
                                            const T* __restrict__ d_o, const float* __restrict__ lse, T* p, T* ds,
                                            std::int64_t seq, std::int64_t head_dim, KeyWindow window) {
  __shared__ float scratch[kWarpSize];
  const softmax_variants::BlockReduce reduce{scratch};
  const std::int64_t row = blockIdx.x, query = row % seq;
  const int thread = static_cast<int>(threadIdx.x);
  float partial = 0.0f;
  for (std::int64_t d = thread; d < head_dim; d += kSoftmaxThreads)
    partial += to_float(d_o[row * head_dim + d]) * to_float(o[row * head_dim + d]);
  const float delta = reduce.sum(partial), row_lse = lse[row];
  for (std::int64_t j = thread; j < seq; j += kSoftmaxThreads) {
    const std::int64_t at = row * seq + j;
    const float probability = window.sees(query, j) ? expf(scores[at] - row_lse) : 0.0f;
    const float gradient = probability * (dp[at] - delta);
    p[at] = from_float<T>(probability);
    ds[at] = from_float<T>(gradient);
  }
}

}  // namespace

std::size_t cublas_backward_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                                            std::size_t element_size) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  const std::size_t scores = naive_workspace_bytes(batch, heads, seq);  // one seq x seq fp32 matrix per head
  if (scores == kMax || scores > kMax / 4) return kMax;
  // S and dP in fp32; P and dS in the input type when it is 16-bit (in place over them for f32).
  return 2 * scores + (element_size < sizeof(float) ? 2 * (scores / sizeof(float) * element_size) : 0);
}

std::string cublas_backward_limits(const AttentionShape& shape) {
  const std::string why = cublas_limits(shape);
  if (!why.empty()) return why;
  if (cublas_backward_workspace_bytes(shape.batch, shape.heads, shape.seq, shape.element_size) ==
      std::numeric_limits<std::size_t>::max())
    return "the workspace, 2 * batch * heads * seq^2 floats and more, overflows 64 bits";
  return "";
}

template <typename T>
void cublas_backward(const AttentionBackwardArgs<T>& args, cudaStream_t stream) {
  if (!ready_to_launch("attention backward cublas", cublas_backward_limits(shape_of(args, 0)), args,
                       cublas_backward_workspace_bytes(args.batch, args.heads, args.seq, sizeof(T))))
    return;
  const std::int64_t matrix = args.batch * args.heads * args.seq * args.seq;
  auto* scores = static_cast<float*>(args.workspace);
  float* dp = scores + matrix;
  T* p = nullptr;
  T* ds = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    p = scores;
    ds = dp;
  } else {
    p = reinterpret_cast<T*>(dp + matrix);
    ds = p + matrix;
  }
  constexpr cudaDataType_t type = cuda_data_type<T>();
  const std::int64_t group = args.heads / args.kv_heads;
  const int seq = static_cast<int>(args.seq), head_dim = static_cast<int>(args.head_dim);
  const int rows = static_cast<int>(group * args.seq), count = static_cast<int>(args.batch * args.kv_heads);
  const long long kv_stride = args.seq * args.head_dim, query_stride = rows * args.head_dim;
  const long long score_stride = rows * args.seq;
  const float one = 1.0f, zero = 0.0f;
  cublasHandle_t handle = cublas_handle(stream);
  const auto gemm = [&](cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const float* alpha,
                        const void* a, cudaDataType_t a_type, int lda, long long a_stride, const void* b,
                        cudaDataType_t b_type, int ldb, long long b_stride, void* c, cudaDataType_t c_type, int ldc,
                        long long c_stride, const char* what) {
    check_cublas(cublasGemmStridedBatchedEx(handle, op_a, op_b, m, n, k, alpha, a, a_type, lda, a_stride, b, b_type,
                                            ldb, b_stride, &zero, c, c_type, ldc, c_stride, count, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT),
                 what);
  };
  // S (rows x seq) = scale Q K^T and dP = dO V^T: column-major S^T = K Q^T.
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, seq, rows, head_dim, &args.scale, args.k, type, head_dim, kv_stride, args.q, type,
       head_dim, query_stride, scores, CUDA_R_32F, seq, score_stride, "cublasGemmStridedBatchedEx (S = scale Q K^T)");
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, seq, rows, head_dim, &one, args.v, type, head_dim, kv_stride, args.d_o, type, head_dim,
       query_stride, dp, CUDA_R_32F, seq, score_stride, "cublasGemmStridedBatchedEx (dP = dO V^T)");
  attention_backward_probabilities_kernel<T>
      <<<static_cast<unsigned>(args.batch * args.heads * args.seq), kSoftmaxThreads, 0, stream>>>(
          scores, dp, args.o, args.d_o, args.lse, p, ds, args.seq, args.head_dim, key_window(args));
  CUDALAB_CHECK_LAUNCH();
  // dV (seq x head_dim) = P^T dO over the group's rows: column-major dV^T = dO^T P.
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, head_dim, seq, rows, &one, args.d_o, type, head_dim, query_stride, p, type, seq,
       score_stride, args.dv, type, head_dim, kv_stride, "cublasGemmStridedBatchedEx (dV = P^T dO)");
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, head_dim, seq, rows, &args.scale, args.q, type, head_dim, query_stride, ds, type, seq,
       score_stride, args.dk, type, head_dim, kv_stride, "cublasGemmStridedBatchedEx (dK = scale dS^T Q)");
  // dQ (rows x head_dim) = scale dS K: column-major dQ^T = K^T dS^T.
  gemm(CUBLAS_OP_N, CUBLAS_OP_N, head_dim, rows, seq, &args.scale, args.k, type, head_dim, kv_stride, ds, type, seq,
       score_stride, args.dq, type, head_dim, query_stride, "cublasGemmStridedBatchedEx (dQ = scale dS K)");
}

template void cublas_backward<float>(const AttentionBackwardArgs<float>&, cudaStream_t);
template void cublas_backward<__half>(const AttentionBackwardArgs<__half>&, cudaStream_t);
template void cublas_backward<__nv_bfloat16>(const AttentionBackwardArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::attention_variants
