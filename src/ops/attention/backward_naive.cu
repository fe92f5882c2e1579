// Backward rung `naive`: the gradients of attention as the textbook writes them, with P and dS
// of every (batch, head) materialized in fp32 in the workspace:
//   P, dS      a thread per (query i, key j): s = scale q_i . k_j, P = exp(s - L_i), dP = dO_i . v_j,
//              D_i = dO_i . O_i, dS = P (dP - D_i); 0 where the mask (causal, window) hides key j;
//   dK, dV     a thread per (kv head, key, dimension), summing over the rows of every query head of
//              its group: dV = P^T dO, dK = scale dS^T Q;
//   dQ         a thread per (head, row, dimension): dQ = scale dS K.
// What it costs: 2 * batch * heads * seq^2 floats of workspace, D_i recomputed by every thread of a
// row, and every sum a thread's own loop over seq. It is the backward's correctness baseline.
#include <cstdint>
#include <limits>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxGridY = 65535;

template <typename T>
__device__ __forceinline__ std::int64_t kv_batch_head(const AttentionBackwardArgs<T>& a, std::int64_t batch_head) {
  const std::int64_t group = a.heads / a.kv_heads;
  return (batch_head / a.heads) * a.kv_heads + (batch_head % a.heads) / group;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_backward_scores_kernel(const AttentionBackwardArgs<T> a, KeyWindow window, float* __restrict__ p,
                                     float* __restrict__ ds) {
  const std::int64_t batch_head = blockIdx.y, seq = a.seq, dim = a.head_dim;
  const std::int64_t pair = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (pair >= seq * seq) return;
  const std::int64_t row = pair / seq, key = pair % seq;
  float probability = 0.0f, gradient = 0.0f;
  if (window.sees(row, key)) {
    const T* q = a.q + (batch_head * seq + row) * dim;
    const T* d_o = a.d_o + (batch_head * seq + row) * dim;
    const T* o = a.o + (batch_head * seq + row) * dim;
    const T* k = a.k + (kv_batch_head(a, batch_head) * seq + key) * dim;
    const T* v = a.v + (kv_batch_head(a, batch_head) * seq + key) * dim;
    float dot = 0.0f, dp = 0.0f, delta = 0.0f;
    for (std::int64_t d = 0; d < dim; ++d) {
      dot += to_float(q[d]) * to_float(k[d]);
      dp += to_float(d_o[d]) * to_float(v[d]);
      delta += to_float(d_o[d]) * to_float(o[d]);
    }
    probability = expf(a.scale * dot - a.lse[batch_head * seq + row]);
    gradient = probability * (dp - delta);
  }
  p[batch_head * seq * seq + pair] = probability;
  ds[batch_head * seq * seq + pair] = gradient;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_backward_kv_kernel(const AttentionBackwardArgs<T> a, KeyWindow window, const float* __restrict__ p,
                                 const float* __restrict__ ds) {
  const std::int64_t kv_head_index = blockIdx.y, seq = a.seq, dim = a.head_dim;
  const std::int64_t element = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (element >= seq * dim) return;
  const std::int64_t key = element / dim, d = element % dim;
  const std::int64_t group = a.heads / a.kv_heads;
  const std::int64_t first_head = (kv_head_index / a.kv_heads) * a.heads + (kv_head_index % a.kv_heads) * group;
  float dv = 0.0f, dk = 0.0f;
  for (std::int64_t batch_head = first_head; batch_head < first_head + group; ++batch_head) {
    const float* p_column = p + batch_head * seq * seq + key;
    const float* ds_column = ds + batch_head * seq * seq + key;
    for (std::int64_t row = window.first_query(key); row < window.query_end(key, seq); ++row) {
      const std::int64_t at = (batch_head * seq + row) * dim + d;
      dv += p_column[row * seq] * to_float(a.d_o[at]);
      dk += ds_column[row * seq] * to_float(a.q[at]);
    }
  }
  a.dv[kv_head_index * seq * dim + element] = from_float<T>(dv);
  a.dk[kv_head_index * seq * dim + element] = from_float<T>(a.scale * dk);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_backward_q_kernel(const AttentionBackwardArgs<T> a, KeyWindow window, const float* __restrict__ ds) {
  const std::int64_t batch_head = blockIdx.y, seq = a.seq, dim = a.head_dim;
  const std::int64_t element = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (element >= seq * dim) return;
  const std::int64_t row = element / dim, d = element % dim;
  const float* ds_row = ds + (batch_head * seq + row) * seq;
  const T* k = a.k + kv_batch_head(a, batch_head) * seq * dim + d;
  float dq = 0.0f;
  for (std::int64_t key = window.first_key(row); key < window.key_end(row, seq); ++key)
    dq += ds_row[key] * to_float(k[key * dim]);
  a.dq[batch_head * seq * dim + element] = from_float<T>(a.scale * dq);
}

}  // namespace

std::size_t naive_backward_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  const std::size_t scores = naive_workspace_bytes(batch, heads, seq);  // one seq x seq fp32 matrix per head
  return scores > kMax / 2 ? kMax : 2 * scores;
}

std::string naive_backward_limits(const AttentionShape& shape) {
  if (shape.batch * shape.heads > kMaxGridY) return "batch * heads above 65535 (a (batch, head) per grid y index)";
  // seq is bounded first so that seq^2 stays inside 64 bits.
  if (shape.seq > 0x7fffffffLL || ceil_div<std::int64_t>(shape.seq * shape.seq, kThreads) > 0x7fffffffLL)
    return "seq^2 / 256 above 2^31 - 1 (the scores kernel's grid x)";
  if (naive_backward_workspace_bytes(shape.batch, shape.heads, shape.seq) == std::numeric_limits<std::size_t>::max())
    return "the workspace, 2 * batch * heads * seq^2 floats, overflows 64 bits";
  return "";
}

template <typename T>
void naive_backward(const AttentionBackwardArgs<T>& args, cudaStream_t stream) {
  if (!ready_to_launch("attention backward naive", naive_backward_limits(shape_of(args, 0)), args,
                       naive_backward_workspace_bytes(args.batch, args.heads, args.seq)))
    return;
  const std::int64_t batch_heads = args.batch * args.heads, seq = args.seq;
  const KeyWindow window = key_window(args);
  auto* p = static_cast<float*>(args.workspace);
  float* ds = p + batch_heads * seq * seq;
  attention_backward_scores_kernel<<<dim3(static_cast<unsigned>(ceil_div<std::int64_t>(seq * seq, kThreads)),
                                          static_cast<unsigned>(batch_heads)),
                                     kThreads, 0, stream>>>(args, window, p, ds);
  CUDALAB_CHECK_LAUNCH();
  const auto element_blocks = static_cast<unsigned>(ceil_div<std::int64_t>(seq * args.head_dim, kThreads));
  attention_backward_kv_kernel<<<dim3(element_blocks, static_cast<unsigned>(args.batch * args.kv_heads)), kThreads, 0,
                                 stream>>>(args, window, p, ds);
  CUDALAB_CHECK_LAUNCH();
  attention_backward_q_kernel<<<dim3(element_blocks, static_cast<unsigned>(batch_heads)), kThreads, 0, stream>>>(
      args, window, ds);
  CUDALAB_CHECK_LAUNCH();
}

template void naive_backward<float>(const AttentionBackwardArgs<float>&, cudaStream_t);
template void naive_backward<__half>(const AttentionBackwardArgs<__half>&, cudaStream_t);
template void naive_backward<__nv_bfloat16>(const AttentionBackwardArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::attention_variants
