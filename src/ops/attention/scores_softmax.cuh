// The row softmax of the unfused rungs, which materialize the scores S = scale Q K^T of every
// (batch, head) in fp32: rung `naive` (its own matmuls) and the `cublas` baseline (cuBLAS GEMMs).
// A block per row of S, all (batch, head)s' rows in order ([batch, heads, seq, seq]): the row max
// and the sum of exp(s - max) over the keys the row sees (KeyWindow: the causal diagonal and a
// sliding window; query = row % seq), then p = exp(s - max) / sum; the keys it does not see get
// p = 0, so the P V product that follows reads whole rows. The row's L = max + log(sum) is written
// here. Decode's scores (the cuBLAS baseline of attention_decode) are rows of `queries` new tokens
// against a cache of seq keys, of which the sequence's first lengths[b] are its own: b = row /
// sequence_rows, query = row % queries at position length - queries + query, where the window
// applies.
#pragma once

#include <algorithm>

#include <cmath>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "core/vector.cuh"
#include "core/warp.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/variants.hpp"
#include "ops/softmax/softmax.cuh"

namespace cudalab::attention_variants {

constexpr int kSoftmaxThreads = 256;  // a block per row of S

// P is written as TP: in place over S when TP is float (`probabilities` == `scores`; each thread
// rewrites only the elements it read, so the pass needs no barrier), or rounded to the 16-bit
// input type into a second buffer, the A operand of a 16-bit P V GEMM.
template <typename TP>
__global__ void __launch_bounds__(kSoftmaxThreads)
    attention_softmax_kernel(const float* scores, TP* probabilities, float* __restrict__ lse, std::int64_t seq,
                             KeyWindow window, std::int64_t queries, std::int64_t sequence_rows,
                             const std::int32_t* lengths) {
  __shared__ float scratch[kWarpSize];
  const softmax_variants::BlockReduce reduce{scratch};
  const std::int64_t row = blockIdx.x;
  const std::int64_t query = row % queries;
  const std::int64_t length =
      lengths != nullptr ? min(static_cast<std::int64_t>(lengths[row / sequence_rows]), seq) : seq;
  const std::int64_t position = length - queries + query;
  const std::int64_t first = window.first_key(position), end = window.key_end(position, length);
  const std::int64_t visible = max(std::int64_t{0}, end - first);
  const float* s = scores + row * seq + first;
  TP* p = probabilities + row * seq;
  const int thread = static_cast<int>(threadIdx.x);
  const float max = reduce.max(softmax_variants::scalar_row_max(s, visible, thread, kSoftmaxThreads));
  const float sum = reduce.sum(softmax_variants::scalar_row_sum_exp(s, visible, max, thread, kSoftmaxThreads));
  const float inverse = 1.0f / sum;
  for (std::int64_t j = thread; j < seq; j += kSoftmaxThreads)
    p[j] = from_float<TP>(j >= first && j < first + visible ? softmax_variants::exp_shifted(s[j - first], max) * inverse
                                                            : 0.0f);
  if (thread == 0) lse[row] = max + logf(sum);
}

// "" when the softmax can take `rows` rows of S (a block each, on grid x), else why not.
inline std::string attention_softmax_limits(std::int64_t rows) {
  return rows > 0x7fffffffLL ? "batch * heads * seq above 2^31 - 1 rows (a block per row of the softmax)" : "";
}

// `rows` (batch * heads * seq, within attention_softmax_limits) rows of S of `seq` scores each.
template <typename TP>
void attention_softmax(const float* scores, TP* probabilities, float* lse, std::int64_t rows, std::int64_t seq,
                       KeyWindow window, cudaStream_t stream) {
  attention_softmax_kernel<TP><<<static_cast<unsigned>(rows), kSoftmaxThreads, 0, stream>>>(
      scores, probabilities, lse, seq, window, seq, rows, nullptr);
  CUDALAB_CHECK_LAUNCH();
}

// Decode's: `rows` rows of `cache` scores, `tokens` queries a (sequence, head), `heads` heads a
// sequence.
template <typename TP>
void attention_decode_softmax(const float* scores, TP* probabilities, float* lse, std::int64_t rows, std::int64_t cache,
                              std::int64_t tokens, std::int64_t heads, const std::int32_t* lengths, KeyWindow window,
                              cudaStream_t stream) {
  attention_softmax_kernel<TP><<<static_cast<unsigned>(rows), kSoftmaxThreads, 0, stream>>>(
      scores, probabilities, lse, cache, window, tokens, heads * tokens, lengths);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::attention_variants
