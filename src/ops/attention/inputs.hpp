// The attention op's Q and K: fill_random's values, with rows where one score dominates planted in
// them, seeded and stateless like fill_random (V takes fill_random as it is).
//
// In every (batch, head), query rows i with i % 7 == 3 are planted: Q[i, d_i] = A with
// d_i = (i / 7) % head_dim, and their partner key j = i / 2 (<= i, so causal rows see it too) gets
// K[j, d_i] = A. Two planted query rows never share a partner (i / 2 = j leaves i in {2j, 2j + 1},
// of which at most one is 3 mod 7). The partner's score then carries scale * A^2 on top of the
// drawn values' scale * sum_d q_d k_d, which A = round(sqrt(32 / scale)) makes about 32 (31-36 for
// head_dims 40-256 at scale 1 / sqrt(head_dim)): the other keys' scores gain at most scale * A
// * |drawn| (about 2 for uniform values, 8 for normal ones), so the row's softmax is one-hot to
// within e^-20 or so, and O's row is V's row j. A key planted for another row shares the dimension
// only when the rows are a multiple of 7 * head_dim apart: rows are strictly one-hot up to seq =
// 7 * head_dim, and split between a few keys past it. A (6 at head_dim 1, 16 at 64, 19 at 128, 23
// at 256) is exact in bf16 and fp16, and its scores stay far from overflow. Distribution::integers draws values up to
// 16, whose scores (thousands) already dominate one another; the planting is then one more large value.
// Distribution::large_magnitude draws normal values here: 1e30-sized inputs overflow any fp32
// dot product (as in GEMM); V keeps them, which O's weighted average handles.
#pragma once

#include <cmath>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"
#include "harness/random.hpp"

namespace cudalab::harness {

inline constexpr std::int64_t kAttentionPlantPeriod = 7;
inline constexpr std::int64_t kAttentionPlantPhase = 3;
inline constexpr double kAttentionDominantScore = 32.0;

// A for `scale`: the planted product scale * A^2 near kAttentionDominantScore.
inline float attention_planted_value(float scale) {
  return static_cast<float>(std::nearbyint(std::sqrt(kAttentionDominantScore / static_cast<double>(scale))));
}

__host__ __device__ inline bool attention_planted_query(std::int64_t row) {
  return row % kAttentionPlantPeriod == kAttentionPlantPhase;
}
__host__ __device__ inline std::int64_t attention_partner_key(std::int64_t query_row) { return query_row / 2; }
__host__ __device__ inline std::int64_t attention_planted_dim(std::int64_t query_row, std::int64_t head_dim) {
  return (query_row / kAttentionPlantPeriod) % head_dim;
}

// The planted query row whose partner is key `key_row`, or -1.
__host__ __device__ inline std::int64_t attention_partner_query(std::int64_t key_row, std::int64_t seq) {
  for (std::int64_t i = 2 * key_row; i <= 2 * key_row + 1; ++i)
    if (i < seq && attention_planted_query(i)) return i;
  return -1;
}

// Q's and K's value at (row, dim) of a (batch, head) given the value drawn there and A.
__host__ __device__ inline float attention_test_query(float drawn, std::int64_t row, std::int64_t dim,
                                                      std::int64_t head_dim, float planted) {
  return attention_planted_query(row) && dim == attention_planted_dim(row, head_dim) ? planted : drawn;
}
__host__ __device__ inline float attention_test_key(float drawn, std::int64_t row, std::int64_t dim, std::int64_t seq,
                                                    std::int64_t head_dim, float planted) {
  const std::int64_t partner = attention_partner_query(row, seq);
  return partner >= 0 && dim == attention_planted_dim(partner, head_dim) ? planted : drawn;
}

// What Q and K draw from for `distribution`: normal for large_magnitude, else itself.
inline Distribution attention_score_distribution(Distribution distribution) {
  return distribution == Distribution::large_magnitude ? Distribution::normal : distribution;
}

// Q ([..., seq, head_dim] of `dtype`: f32, bf16 or f16, `count` elements): fill_random's values
// for attention_score_distribution(distribution), then the planted rows for `scale`.
void fill_attention_queries(DType dtype, void* device, std::int64_t count, std::uint64_t seed,
                            Distribution distribution, std::int64_t seq, std::int64_t head_dim, float scale,
                            cudaStream_t stream);
// K likewise, with the planted partner keys.
void fill_attention_keys(DType dtype, void* device, std::int64_t count, std::uint64_t seed, Distribution distribution,
                         std::int64_t seq, std::int64_t head_dim, float scale, cudaStream_t stream);

}  // namespace cudalab::harness
