// The attention op's CPU reference and check. For query row i of (batch b, head h), with kv head
// h / (heads / kv_heads), the scores s_j = scale * sum_d q_d k_jd over the visible keys j (j <= i
// under causal; i - window_left <= j <= i + window_right where those are not -1; the n of them),
// m = max s_j, Z = sum_j exp(s_j - m), p_j = exp(s_j - m)
// / Z, O_d = sum_j p_j v_jd and L = m + log Z, all in double from the inputs as stored (the dtype's
// values widened exactly) and the fp32 scale the kernels get.
//
// Which rows: every row when batch * heads * seq^2 * head_dim <= 2^30 multiply-adds; past that, in
// every (batch, head), the first and last rows and 30 more drawn by a fixed seed from the (batch,
// head) (attention_checked_rows): a sample that costs the CPU about 64 * 32 * seq * head_dim * 4
// flops at the largest bench problems instead of hours. Comparison has no field that says a check
// sampled: its count (the elements checked) is what shows it, smaller than O's and L's sizes.
// Outputs: the Comparison's elements are O's elements checked followed by L's; an index past O's
// size, batch * heads * seq * head_dim, is L's element index plus that size.
//
// Tolerance of O_d, derived in units u = 2^-24 (one fp32 rounding), u_P (the unit roundoff of what
// P is multiplied by V in: the dtype's, since the 16-bit rungs round P to it as FlashAttention
// does; 2^-24 for f32) and u_out (the output dtype's), first order:
//   Scores. Each kernel forms the raw dot product sum_d q_d k_jd in fp32: at most head_dim roundings
//     of partial sums each bounded by a_j = sum_d |q_d k_jd| (the worst case of recursive summation);
//     tensor cores' internal adds may truncate rather than round, which doubles it: 2 head_dim u
//     scale a_j. Then the scale (and log2 e, folded in as one fp32 constant), the subtraction of the
//     row max and exp2f's 2 ulp: relative errors of a few u on s_j and m, and 4 u on exp(s_j - m):
//       |ds_j| = 2 head_dim u scale a_j + 4 u (|s_j| + |m|) + 4 u.
//     An error ds_j in the exponent moves p_j by p_j (ds_j - sum_k p_k ds_k) (softmax's
//     derivative), so O_d by sum_j p_j (ds_j - sum_k p_k ds_k) v_jd = sum_j p_j ds_j (v_jd - O_d):
//       |dO_d| <= sum_j p_j |ds_j| |v_jd - O_d|.
//   P. Rounding p_j to u_P moves it by at most u_P p_j + eta_P, eta_P being what a value below the
//     normal range of P's type can lose (half fp16's subnormal step, 2^-25, for every p below 2^-14,
//     about e^-9.7; fp32's smallest normal 2^-126 for f32 and bf16, where exp2f or a rounding may
//     flush);
//     O_d by at most sum_j (u_P p_j + eta_P) |v_jd|, and a rung that also sums l from the rounded p
//     by as much again: 2 u_P sum_j p_j |v_jd| + 2 eta_P sum_j |v_jd|.
//   Sums. O's accumulator and l are sums over the n keys, each a sequential run in a thread (an
//     add per key and at most one rescale per key: 2n roundings, each at most u of a partial sum
//     bounded by the terms' magnitudes) merged across lanes by a tree (ceil(log2 n) more):
//       c(n) = 2n + ceil(log2 n),
//     |dO_d| <= c(n) u sum_j p_j |v_jd| from O's sum and c(n) u |O_d| <= c(n) u sum_j p_j |v_jd|
//     from l's; the products p v, the reciprocal of l and its product add 6 u sum_j p_j |v_jd|.
//     The worst case, not the probabilistic lambda sqrt(n) u of independent roundings (Higham &
//     Mary 2019): equal values added in order round the same way every time, and an fp32 emulation
//     of the kernels on all_equal inputs (tests/host) was off by 1170-1640 u at 4096 keys, past
//     10 sqrt(2n) u = 905 u.
//   Output. One rounding to the output dtype: a unit in the last place, 2 u_out |O_d|, as
//     Tolerance::rounded allows.
//   So bound_d = atol + 2 u_out |O_d| + (2 u_P + (2 c(n) + 6) u) sum_j p_j |v_jd| + 2 eta_P sum_j |v_jd|
//                     + sum_j p_j |ds_j| |v_jd - O_d|,
//   atol covering an output rounded in fp16's subnormal range (2^-24, its step; 2^-126 for f32 and
//   bf16). At 4096 keys the sums' term is 1e-3 of sum_j p_j |v_jd|: loose for f32 rows whose values
//   do not repeat, which the L2 limit below does not tighten either (the sums' term is in its floor).
// Tolerance of L (fp32 whatever the dtype): dL/ds_j = p_j, so the scores move it by
//   sum_j p_j |ds_j|; l's relative error c(n) u (and u_P when l sums rounded p); log2f's or logf's
//   error, at most 2^-21.4 absolute near 1 and 2 ulp elsewhere, and the product by ln 2 and the add
//   of m: 12 u + 4 u |L|. bound_L = sum_j p_j |ds_j| + (c(n) + 12) u + u_P + 4 u |L|.
// NaN, infinity and elements still holding the poison pattern always fail.
//
// The output as a whole: O's relative L2 error is held to output_rel_l2_limit(dtype) (1e-5 f32, 4e-3
// bf16, 1e-3 f16) beside the element bounds, as the fused ops are (L2Error), with every term that
// does not scale with the outputs' rounding (atol, the sums', eta_P's and the scores') as each
// element's floor. What the limit then holds is P's and O's rounding, u_P / sqrt(3) + u_out /
// sqrt(3) of ||O|| or so (an fp32 emulation of the kernels with P rounded to bf16 measured 1.9e-3,
// against 4e-3), where it catches an error every element's bound would let through. The floors
// are needed: large scores (integer-valued inputs give |s| in the thousands) carry an absolute
// error no relative limit can meet, and so do probabilities rounded to fp16 subnormals and fp32
// sums of 4096 equal values (7e-5 to 1e-4 relative in the emulation, against f32's 1e-5). L is held
// to its element bounds only: it is an absolute quantity that may be near 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cudalab/dtype.hpp"
#include "harness/compare.hpp"

namespace cudalab::harness {

// The scale the harness runs every problem at, as the library's default: 1 / sqrt(head_dim) in fp32.
float attention_default_scale(std::int64_t head_dim);

// A problem's host tensors: q, k, v and o of `dtype`, lse fp32, in the layouts variants.hpp gives.
struct AttentionTensors {
  DType dtype = DType::f32;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* o = nullptr;
  const float* lse = nullptr;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  float scale = 0.0f;
  bool causal = false;
  std::int64_t window_left = -1, window_right = -1;  // a sliding window's sides, -1 unbounded
  // Decode (attention_decode): q and o hold `queries` rows a (batch, head), the newest tokens of
  // each sequence, and k and v hold seq rows of which sequence b's first lengths[b] are its keys;
  // query row i sits at position lengths[b] - queries + i, and a causal row sees the keys up to
  // it. 0 and null: self-attention, seq queries against all seq keys.
  std::int64_t queries = 0;
  const std::int32_t* lengths = nullptr;
};

// One query row's reference in double and what each of its outputs is allowed (see above). o_floor
// is the part of o_bound that does not scale with the outputs' rounding (atol, the sums', eta_P's
// and the scores' terms), which the L2 limit excuses.
struct AttentionRowReference {
  std::vector<double> o, o_bound, o_floor;
  double lse = 0.0, lse_bound = 0.0;
};

// Row `row` of (batch_index, head) of `t` (its q, k, v; o and lse are not read).
AttentionRowReference reference_attention_row(const AttentionTensors& t, std::int64_t batch_index, std::int64_t head,
                                              std::int64_t row);

// c(n) above: the roundings' factor for sums over n keys.
double attention_sum_factor(std::int64_t keys);

// Problems up to this many multiply-adds (batch * heads * seq^2 * head_dim) are checked at every row.
inline constexpr double kAttentionFullCheckMultiplyAdds = 0x1p30;
// Rows drawn at random in each (batch, head) of a larger problem, beside its first and last.
inline constexpr int kAttentionSampledRows = 30;

bool attention_checks_every_row(std::int64_t batch, std::int64_t heads, std::int64_t seq, std::int64_t head_dim);

// The query rows checked in (batch_index, head), in increasing order: all of them when
// `every_row`, else 0, seq - 1 and up to kAttentionSampledRows distinct others drawn by a seed that
// depends on (batch_index, head) only, so two checks of one problem look at the same rows.
std::vector<std::int64_t> attention_checked_rows(std::int64_t seq, std::int64_t batch_index, std::int64_t head,
                                                 bool every_row);

// O and L of `t` against the reference at the rows above, in parallel over (batch, head)s.
Comparison check_attention(const AttentionTensors& t);

// Host memory the check takes beyond the tensors: each worker's K and V of one kv head in double.
std::size_t attention_check_host_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq, std::int64_t head_dim);

// The backward: dQ, dK and dV from Q, K, V, O, dO and L (all as stored; L in fp32). For query row i
// and key j of (batch b, head h) with j visible: s_ij = scale q_i . k_j, P_ij = exp(s_ij - L_i),
// dP_ij = dO_i . v_j, D_i = dO_i . O_i, dS_ij = P_ij (dP_ij - D_i); then dQ_i = scale sum_j dS_ij
// k_j, and for kv head g, dK_j = scale sum over g's query heads and rows i of dS_ij q_i, dV_j = the
// same sum of P_ij dO_i. In double, the formula applied to the O and L given, as a kernel does.
//
// Which rows: dQ at attention_checked_rows of each (batch, head); dK and dV at those of each
// (batch, kv head); every row of small problems (attention_checks_every_row). Elements: dQ's
// checked, then dK's (index + dQ's size), then dV's (index + dQ's and dK's sizes).
//
// Tolerance, first order in u = 2^-24 and u_T (the dtype's unit roundoff: the 16-bit kernels round
// P before dV = P^T dO and dS before dK and dQ, as FlashAttention-2 does), per (i, j) term:
//   s_ij, and so P_ij, carries the forward's score error ds_ij = 2 head_dim u scale a_ij + 4 u
//     (|s_ij| + |L_i|) + 4 u (a_ij = sum_d |q_id k_jd|): |dP_ij| <= P_ij ds_ij;
//   dP_ij and D_i are fp32 dot products: 2 head_dim u sum_d |dO_id v_jd| and 2 head_dim u sum_d
//     |dO_id O_id|;
//   dS_ij: (P_ij ds_ij + eta) |dP_ij - D_i| + P_ij (those two) + (u_T + 2 u) |dS_ij| + eta: P's
//     error, a P below the normal range flushed (eta_P of the forward: ex2.approx.ftz returns 0
//     below 2^-126) included, times the factor it multiplies; the rounding to T; eta again for a
//     dS below the normal range. The flushed P matters: integer inputs give |dP - D| in the
//     thousands, and P = 2^-130 flushed then moves dS by 1e-36 (the mma rung on the H100, 4ba715a);
//   P as rounded for dV: P_ij (ds_ij + u_T) + eta.
// Each output sums n such terms (the visible keys for dQ; the visible rows of every query head of
// the group for dK and dV) in fp32, in any order (atomics allowed): c(n) u times the sum of the
// terms' magnitudes, as the forward's O; 4 u of it for the products and the scale; and one
// rounding to the output dtype, 2 u_out |ref|, above atol. The result: bound = atol + 2 u_out |ref|
// + sum of the terms' errors + (c(n) + 4) u sum of |terms|. No L2 limit: dS sums to 0 over a row,
// so dQ and dK cancel, and a relative limit on them would hold the inputs' rounding, not the
// kernel's.
struct AttentionBackwardTensors {
  DType dtype = DType::f32;
  const void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *d_o = nullptr;
  const float* lse = nullptr;
  const void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  float scale = 0.0f;
  bool causal = false;
  std::int64_t window_left = -1, window_right = -1;
};

Comparison check_attention_backward(const AttentionBackwardTensors& t);

// Host memory the backward check takes beyond the tensors: each worker's K and V of one kv head,
// and Q, dO and O of one head, in double, with its accumulators.
std::size_t attention_backward_check_host_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                                                std::int64_t head_dim);

}  // namespace cudalab::harness
