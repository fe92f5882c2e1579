// The attention op without a GPU: the reference against hand-computed rows (one key, two keys,
// causal row 0, grouped-query head mapping), the check accepting the reference's own outputs and
// rejecting one perturbed past its bound (and an unwritten one), the sampled rows of large
// problems, the dominant-score fill's host twin making rows one-hot, the op's registration
// (ladder order, parameter validation, work model), the sliding window's bounds and reference,
// and the library calls' argument checks, which
// come before anything touches a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cudalab/attention.hpp"
#include "cudalab/dtype.hpp"
#include "error_kind.hpp"
#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/attention/ids.hpp"
#include "ops/attention/inputs.hpp"
#include "ops/attention/reference.hpp"
#include "ops/attention/variants.hpp"
#include "typed_array.hpp"

namespace cudalab::harness {
namespace {

namespace ids = attention_ids;

constexpr std::uint64_t kSeed = 0xA77E;

using Array = cudalab::test_support::TypedArray;

// A problem's tensors on the host: q, k, v as given, o and lse as a test sets them.
struct HostAttention {
  std::int64_t batch, heads, kv_heads, seq, head_dim;
  bool causal;
  DType dtype;
  Array q, k, v, o;
  std::vector<float> lse;

  HostAttention(DType type, std::int64_t b, std::int64_t h, std::int64_t kv, std::int64_t s, std::int64_t d, bool c)
      : batch(b),
        heads(h),
        kv_heads(kv),
        seq(s),
        head_dim(d),
        causal(c),
        dtype(type),
        q(type, b * h * s * d),
        k(type, b * kv * s * d),
        v(type, b * kv * s * d),
        o(type, b * h * s * d),
        lse(static_cast<std::size_t>(b * h * s), 0.0f) {}

  AttentionTensors tensors(float scale) const {
    AttentionTensors t;
    t.dtype = dtype;
    t.q = q.data();
    t.k = k.data();
    t.v = v.data();
    t.o = o.data();
    t.lse = lse.data();
    t.batch = batch;
    t.heads = heads;
    t.kv_heads = kv_heads;
    t.seq = seq;
    t.head_dim = head_dim;
    t.scale = scale;
    t.causal = causal;
    return t;
  }
  AttentionTensors tensors() const { return tensors(attention_default_scale(head_dim)); }

  // Q, K and V as the op's fills make them: fill_random's values for the distribution, rounded to
  // the dtype, with the planted rows in Q and K (but for fp16's large magnitudes, which fill_random
  // draws from fp16's own range).
  void fill(Distribution distribution) {
    const float planted = attention_planted_value(attention_default_scale(head_dim));
    const Distribution scores = attention_score_distribution(distribution);
    const std::int64_t q_count = batch * heads * seq * head_dim, kv_count = batch * kv_heads * seq * head_dim;
    for (std::int64_t i = 0; i < q_count; ++i) {
      q.set(i, random_value(kSeed, i, q_count, scores));
      q.set(i,
            attention_test_query(static_cast<float>(q.get(i)), (i / head_dim) % seq, i % head_dim, head_dim, planted));
    }
    for (std::int64_t i = 0; i < kv_count; ++i) {
      k.set(i, random_value(kSeed + 1, i, kv_count, scores));
      k.set(i, attention_test_key(static_cast<float>(k.get(i)), (i / head_dim) % seq, i % head_dim, seq, head_dim,
                                  planted));
      v.set(i, random_value(kSeed + 2, i, kv_count, distribution));
    }
  }

  // o and lse from the reference, rounded to their types.
  void set_outputs_to_reference() {
    const AttentionTensors t = tensors();
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t i = 0; i < seq; ++i) {
          const AttentionRowReference ref = reference_attention_row(t, b, h, i);
          const std::int64_t row = (b * heads + h) * seq + i;
          for (std::int64_t d = 0; d < head_dim; ++d) o.set(row * head_dim + d, ref.o[static_cast<std::size_t>(d)]);
          lse[static_cast<std::size_t>(row)] = static_cast<float>(ref.lse);
        }
      }
    }
  }
};

// `value` rounded to `dtype` (the identity for f32).
float rounded(DType dtype, float value) {
  unsigned char bytes[sizeof(float)];
  element_from_double(dtype, value, bytes, 0);
  return static_cast<float>(element_to_double(dtype, bytes, 0));
}

// O and L as the rungs compute them, in fp32: Q scaled by scale * log2(e), dot products summed in
// order, an online softmax over 64-key tiles (running max, and the sum and accumulator rescaled by
// exp2(m_old - m_new)) that adds every key in order, the worst case of the kernels' sequential
// runs; with `round_p` each p rounded to the dtype before it multiplies V, as the tensor-core rungs
// do.
void host_flash_attention(HostAttention& p, bool round_p) {
  const std::int64_t dim = p.head_dim;
  const float score_scale = attention_default_scale(dim) * 1.4426950408889634f;
  const auto floats = [](const Array& a) {
    std::vector<float> out(a.bytes.size() / size_of(a.dtype));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(a.get(static_cast<std::int64_t>(i)));
    return out;
  };
  const std::vector<float> q = floats(p.q), k = floats(p.k), v = floats(p.v);
  std::vector<float> scaled_q(static_cast<std::size_t>(dim)), o(scaled_q.size()), s;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads; ++h) {
      const std::int64_t kv = (b * p.kv_heads + h / (p.heads / p.kv_heads)) * p.seq;
      for (std::int64_t i = 0; i < p.seq; ++i) {
        const std::int64_t row = (b * p.heads + h) * p.seq + i;
        for (std::int64_t d = 0; d < dim; ++d)
          scaled_q[static_cast<std::size_t>(d)] = q[static_cast<std::size_t>(row * dim + d)] * score_scale;
        const std::int64_t keys = p.causal ? i + 1 : p.seq;
        float m = -INFINITY, l = 0.0f;
        std::fill(o.begin(), o.end(), 0.0f);
        for (std::int64_t first = 0; first < keys; first += 64) {
          const std::int64_t last = std::min(keys, first + 64);
          s.clear();
          float tile_max = -INFINITY;
          for (std::int64_t j = first; j < last; ++j) {
            const float* k_row = k.data() + (kv + j) * dim;
            float dot = 0.0f;
            for (std::int64_t d = 0; d < dim; ++d) dot += scaled_q[static_cast<std::size_t>(d)] * k_row[d];
            s.push_back(dot);
            tile_max = std::max(tile_max, dot);
          }
          const float m_new = std::max(m, tile_max), rescale = std::exp2(m - m_new);
          l *= rescale;
          for (float& x : o) x *= rescale;
          for (std::int64_t j = first; j < last; ++j) {
            const float e = std::exp2(s[static_cast<std::size_t>(j - first)] - m_new);
            l += e;
            const float weight = round_p ? rounded(p.dtype, e) : e;
            const float* v_row = v.data() + (kv + j) * dim;
            for (std::int64_t d = 0; d < dim; ++d) o[static_cast<std::size_t>(d)] += weight * v_row[d];
          }
          m = m_new;
        }
        const float inverse = 1.0f / l;
        for (std::int64_t d = 0; d < dim; ++d) p.o.set(row * dim + d, o[static_cast<std::size_t>(d)] * inverse);
        p.lse[static_cast<std::size_t>(row)] = (m + std::log2(l)) * 0.6931471805599453f;
      }
    }
  }
}

TEST(AttentionReference, OneKeyGivesItsValueRowAndItsScore) {
  HostAttention p(DType::f32, 1, 1, 1, 1, 4, false);
  const double q[] = {1, 2, 3, 4}, k[] = {0.5, -1, 0.25, 2}, v[] = {3, -2, 7, 0.5};
  for (int d = 0; d < 4; ++d) {
    p.q.set(d, q[d]);
    p.k.set(d, k[d]);
    p.v.set(d, v[d]);
  }
  const AttentionRowReference ref = reference_attention_row(p.tensors(0.5f), 0, 0, 0);
  for (int d = 0; d < 4; ++d) EXPECT_DOUBLE_EQ(ref.o[static_cast<std::size_t>(d)], v[d]);
  EXPECT_DOUBLE_EQ(ref.lse, 0.5 * (0.5 - 2 + 0.75 + 8));
}

TEST(AttentionReference, TwoKeysWeightTheirValuesBySoftmax) {
  HostAttention p(DType::f32, 1, 1, 1, 2, 1, false);
  p.q.set(0, 1);
  p.k.set(0, 0);  // score 0
  p.k.set(1, 2);  // score 2
  p.v.set(0, 10);
  p.v.set(1, -4);
  const AttentionRowReference ref = reference_attention_row(p.tensors(1.0f), 0, 0, 0);
  const double p1 = std::exp(2.0) / (1 + std::exp(2.0));
  EXPECT_NEAR(ref.o[0], (1 - p1) * 10 + p1 * -4, 1e-12);
  EXPECT_NEAR(ref.lse, std::log(1 + std::exp(2.0)), 1e-12);
}

TEST(AttentionReference, CausalRowsSeeNoLaterKey) {
  HostAttention p(DType::f32, 1, 1, 1, 3, 2, true);
  for (std::int64_t i = 0; i < 6; ++i) {
    p.q.set(i, 0.1 * static_cast<double>(i + 1));
    p.k.set(i, -0.2 * static_cast<double>(i));
    p.v.set(i, static_cast<double>(i * i));
  }
  const AttentionRowReference row0 = reference_attention_row(p.tensors(1.0f), 0, 0, 0);
  EXPECT_DOUBLE_EQ(row0.o[0], p.v.get(0));
  EXPECT_DOUBLE_EQ(row0.o[1], p.v.get(1));
  EXPECT_DOUBLE_EQ(row0.lse, p.q.get(0) * p.k.get(0) + p.q.get(1) * p.k.get(1));
  // Row 1 reads keys 0 and 1: V's row 2 does not move it, and row 2 does see it.
  const AttentionRowReference row1 = reference_attention_row(p.tensors(1.0f), 0, 0, 1);
  const AttentionRowReference row2 = reference_attention_row(p.tensors(1.0f), 0, 0, 2);
  p.v.set(4, 1000);
  EXPECT_EQ(reference_attention_row(p.tensors(1.0f), 0, 0, 1).o, row1.o);
  EXPECT_NE(reference_attention_row(p.tensors(1.0f), 0, 0, 2).o, row2.o);
}

// The window's bounds are the first and past the last key (or query) that sees() admits, for
// windows that bind on either side, both, neither, and causal; in 64 and 32 bits.
template <typename Index>
void expect_window_bounds_match_sees() {
  for (const Index seq : {Index{1}, Index{5}, Index{130}})
    for (const bool causal : {false, true})
      for (const Index left : {Index{-1}, Index{0}, Index{3}, Index{64}, Index{200}})
        for (const Index right : {Index{-1}, Index{0}, Index{7}}) {
          const attention_variants::KeyWindow w64 = attention_variants::key_window(seq, causal, left, right);
          const attention_variants::BasicKeyWindow<Index> w{static_cast<Index>(w64.left),
                                                            static_cast<Index>(w64.right)};
          const std::string label =
              std::to_string(seq) + (causal ? " causal " : " ") + std::to_string(left) + " " + std::to_string(right);
          for (Index i = 0; i < seq; ++i) {
            Index first = seq, end = 0, first_query = seq, query_end = 0;
            for (Index j = 0; j < seq; ++j) {
              if (w.sees(i, j)) first = std::min(first, j), end = std::max(end, j + 1);
              if (w.sees(j, i)) first_query = std::min(first_query, j), query_end = std::max(query_end, j + 1);
            }
            EXPECT_TRUE(w.sees(i, i)) << label;
            EXPECT_EQ(w.first_key(i), first) << label << " query " << i;
            EXPECT_EQ(w.key_end(i, seq), end) << label << " query " << i;
            EXPECT_EQ(w.first_query(i), first_query) << label << " key " << i;
            EXPECT_EQ(w.query_end(i, seq), query_end) << label << " key " << i;
            if (causal) {
              EXPECT_EQ(end, i + 1) << label;
            }
            if (left < 0) {
              EXPECT_EQ(first, 0) << label;
            }
          }
        }
}

TEST(AttentionWindow, BoundsAreTheKeysSeesAdmits) {
  expect_window_bounds_match_sees<std::int64_t>();
  expect_window_bounds_match_sees<int>();
  // window_binds: only where a key is hidden beyond what causal hides.
  EXPECT_FALSE(attention_variants::window_binds(100, true, 99, -1));
  EXPECT_TRUE(attention_variants::window_binds(100, true, 98, -1));
  EXPECT_FALSE(attention_variants::window_binds(100, true, -1, 5)) << "causal hides what a right window would";
  EXPECT_TRUE(attention_variants::window_binds(100, false, -1, 5));
  EXPECT_FALSE(attention_variants::window_binds(100, false, 500, 500));
}

// The Hopper forward's launch: persistent for every dense batch without a mask, causal up to seq
// 8192 (H200: 0.93-0.96x a block a row block's time at 8192, 1.43x at 16384).
TEST(AttentionRules, PersistentForwardWithoutAMaskAndCausalUpTo8192) {
  for (std::int64_t seq : {1, 127, 128, 512, 8192, 8193, 16384, 1 << 20})
    EXPECT_TRUE(attention_variants::wgmma_forward_persistent(seq, false)) << seq;
  for (std::int64_t seq : {1, 128, 2048, 8191, 8192})
    EXPECT_TRUE(attention_variants::wgmma_forward_persistent(seq, true)) << seq;
  for (std::int64_t seq : {8193, 8320, 16384, 32768})
    EXPECT_FALSE(attention_variants::wgmma_forward_persistent(seq, true)) << seq;
}

// A windowed row is the softmax over the keys i - left .. i + right only, computed here in double
// from the stored values; a window as wide as the sequence changes nothing; a window of 0 on both
// sides gives the row's own V.
TEST(AttentionReference, WindowedRowsSeeOnlyTheirWindow) {
  HostAttention p(DType::f32, 1, 2, 1, 40, 8, false);
  p.fill(Distribution::normal);
  const std::int64_t left = 7, right = 3;
  AttentionTensors t = p.tensors();
  t.window_left = left;
  t.window_right = right;
  for (const std::int64_t i : {0, 5, 20, 39}) {
    const std::int64_t first = std::max<std::int64_t>(0, i - left), end = std::min<std::int64_t>(40, i + right + 1);
    std::vector<double> scores;
    double max = -INFINITY;
    for (std::int64_t j = first; j < end; ++j) {
      double dot = 0.0;
      for (std::int64_t d = 0; d < 8; ++d) dot += p.q.get((40 + i) * 8 + d) * p.k.get(j * 8 + d);
      scores.push_back(static_cast<double>(t.scale) * dot);
      max = std::max(max, scores.back());
    }
    double sum = 0.0;
    for (const double s : scores) sum += std::exp(s - max);
    const AttentionRowReference ref = reference_attention_row(t, 0, 1, i);
    EXPECT_NEAR(ref.lse, max + std::log(sum), 1e-12) << i;
    for (std::int64_t d = 0; d < 8; ++d) {
      double o = 0.0;
      for (std::int64_t j = first; j < end; ++j)
        o += std::exp(scores[static_cast<std::size_t>(j - first)] - max) / sum * p.v.get(j * 8 + d);
      EXPECT_NEAR(ref.o[static_cast<std::size_t>(d)], o, 1e-12) << i << " " << d;
    }
  }
  AttentionTensors wide = p.tensors();
  wide.window_left = wide.window_right = 39;
  AttentionTensors own = p.tensors();
  own.window_left = own.window_right = 0;
  for (const std::int64_t i : {0, 17, 39}) {
    EXPECT_EQ(reference_attention_row(wide, 0, 0, i).o, reference_attention_row(p.tensors(), 0, 0, i).o) << i;
    const AttentionRowReference alone = reference_attention_row(own, 0, 0, i);
    for (std::int64_t d = 0; d < 8; ++d) EXPECT_DOUBLE_EQ(alone.o[static_cast<std::size_t>(d)], p.v.get(i * 8 + d));
  }
}

TEST(AttentionReference, QueryHeadsReadTheirGroupsKvHead) {
  // 2 batches x 4 heads over 2 kv heads, seq 1: O of head h is V of kv head h / 2.
  HostAttention p(DType::f32, 2, 4, 2, 1, 3, false);
  for (std::int64_t i = 0; i < 2 * 4 * 3; ++i) p.q.set(i, 0.5);
  for (std::int64_t i = 0; i < 2 * 2 * 3; ++i) {
    p.k.set(i, 1.0);
    p.v.set(i, static_cast<double>(i));
  }
  for (std::int64_t b = 0; b < 2; ++b) {
    for (std::int64_t h = 0; h < 4; ++h) {
      const AttentionRowReference ref = reference_attention_row(p.tensors(), b, h, 0);
      const std::int64_t kv_row = b * 2 + h / 2;
      for (std::int64_t d = 0; d < 3; ++d)
        EXPECT_EQ(ref.o[static_cast<std::size_t>(d)], p.v.get(kv_row * 3 + d)) << b << " " << h << " " << d;
    }
  }
}

TEST(AttentionCheck, AcceptsTheReferenceAndRejectsAnErrorPastItsBound) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (Distribution distribution : all_distributions()) {
      // fill_random draws fp16's large magnitudes from its own range; fill() here does not repeat the rule.
      if (dtype == DType::f16 && distribution == Distribution::large_magnitude) continue;
      for (const bool causal : {false, true}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " " + to_string(distribution) + (causal ? " causal" : ""));
        HostAttention p(dtype, 2, 4, 2, 70, 40, causal);
        p.fill(distribution);
        p.set_outputs_to_reference();
        const Comparison good = check_attention(p.tensors());
        EXPECT_TRUE(good.passed()) << good.summary();
        EXPECT_EQ(good.count, 2 * 4 * 70 * (40 + 1)) << "every row, O and L";

        // One O element and one L element moved past their bounds.
        const std::int64_t row = 37, d = 5, o_index = ((1 * 4 + 3) * 70 + row) * 40 + d;
        const AttentionRowReference ref = reference_attention_row(p.tensors(), 1, 3, row);
        HostAttention bad = p;
        bad.o.set(o_index, ref.o[d] + 3 * ref.o_bound[d]);
        Comparison c = check_attention(bad.tensors());
        EXPECT_EQ(c.mismatches, 1) << c.summary();
        EXPECT_EQ(c.first_mismatch, o_index);

        bad = p;
        const std::int64_t l_index = (1 * 4 + 3) * 70 + row;
        bad.lse[static_cast<std::size_t>(l_index)] = static_cast<float>(ref.lse + 2 * ref.lse_bound);
        c = check_attention(bad.tensors());
        EXPECT_EQ(c.mismatches, 1) << c.summary();
        EXPECT_EQ(c.first_mismatch, 2 * 4 * 70 * 40 + l_index) << "L's elements follow O's";

        bad = p;
        bad.o.poison(o_index);
        std::memset(&bad.lse[3], kFloatPoisonByte, sizeof(float));
        c = check_attention(bad.tensors());
        EXPECT_EQ(c.unwritten, 2) << c.summary();
        EXPECT_EQ(c.mismatches, 2);
      }
    }
  }
}

// The rungs' own fp32 arithmetic passes every element bound and the L2 limit, on every
// distribution, with P kept in fp32 or rounded to the dtype; and at 4096 keys, the longest f32 test
// problem's rows.
TEST(AttentionCheck, AcceptsTheRungsFp32Arithmetic) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (Distribution distribution : all_distributions()) {
      if (dtype == DType::f16 && distribution == Distribution::large_magnitude) continue;
      for (const bool causal : {false, true}) {
        for (const bool round_p : {false, true}) {
          SCOPED_TRACE(std::string(to_string(dtype)) + " " + to_string(distribution) + (causal ? " causal" : "") +
                       (round_p ? " rounded P" : ""));
          HostAttention p(dtype, 1, 2, 1, 200, 32, causal);
          p.fill(distribution);
          host_flash_attention(p, round_p);
          const Comparison c = check_attention(p.tensors());
          EXPECT_TRUE(c.passed()) << c.summary();
          EXPECT_LE(c.rel_l2_error, output_rel_l2_limit(dtype)) << c.summary();
        }
      }
    }
  }
  // Equal values summed in order round the same way at every step: the fp32 sums' worst case, which
  // the element bounds must allow; O is off by about 1e-4 relative, past f32's L2 limit, which the
  // sums' term in the floors excuses. Causal, so the rows run from 1 key to 4096 at half the cost of
  // every row seeing all 4096 (the host suite's time).
  for (const DType dtype : {DType::f32, DType::bf16}) {
    const Distribution distribution = dtype == DType::f32 ? Distribution::all_equal : Distribution::uniform;
    SCOPED_TRACE(std::string(to_string(dtype)) + " " + to_string(distribution) + " 4096 keys");
    HostAttention p(dtype, 1, 1, 1, 4096, 8, true);
    p.fill(distribution);
    host_flash_attention(p, dtype != DType::f32);
    const Comparison c = check_attention(p.tensors());
    EXPECT_TRUE(c.passed()) << c.summary();
    if (dtype == DType::f32) {
      EXPECT_GT(c.rel_l2_error, output_rel_l2_limit(dtype)) << c.summary();
    } else {
      EXPECT_LE(c.rel_l2_error, output_rel_l2_limit(dtype)) << c.summary();
    }
  }
}

TEST(AttentionCheck, BoundsGrowWithTheScoresAndTheKeys) {
  EXPECT_EQ(attention_sum_factor(1), 2);             // 2 roundings, no tree
  EXPECT_EQ(attention_sum_factor(4096), 8192 + 12);  // 2n, and the tree's depth
  // Two keys of equal score and values +-1 (O = 0, p = 1/2 each): the score term of O's bound, its
  // floor, is the scores' error, which grows with their size.
  const auto floor_at = [](double x) {
    HostAttention p(DType::f32, 1, 1, 1, 2, 1, false);
    p.q.set(0, x);
    p.k.set(0, x);
    p.k.set(1, x);
    p.v.set(0, 1);
    p.v.set(1, -1);
    const AttentionRowReference ref = reference_attention_row(p.tensors(1.0f), 0, 0, 0);
    EXPECT_EQ(ref.o[0], 0.0);
    return ref.o_floor[0];
  };
  EXPECT_GT(floor_at(64), 100 * floor_at(1));
}

TEST(AttentionCheck, LargeProblemsSampleTheFirstLastAndThirtyRowsOfEveryHead) {
  EXPECT_TRUE(attention_checks_every_row(1, 1, 4096, 64));  // exactly 2^30 multiply-adds
  EXPECT_FALSE(attention_checks_every_row(1, 1, 4096, 128));
  EXPECT_EQ(attention_checked_rows(100, 0, 0, true).size(), 100u);
  EXPECT_EQ(attention_checked_rows(20, 3, 1, false).size(), 20u);  // too short to sample
  std::set<std::string> samples;
  for (std::int64_t b = 0; b < 2; ++b) {
    for (std::int64_t h = 0; h < 3; ++h) {
      const std::vector<std::int64_t> rows = attention_checked_rows(4096, b, h, false);
      EXPECT_EQ(rows.size(), static_cast<std::size_t>(kAttentionSampledRows + 2));
      EXPECT_EQ(rows.front(), 0);
      EXPECT_EQ(rows.back(), 4095);
      EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
      EXPECT_EQ(std::set<std::int64_t>(rows.begin(), rows.end()).size(), rows.size());
      EXPECT_EQ(rows, attention_checked_rows(4096, b, h, false)) << "the same rows every time";
      std::string key;
      for (std::int64_t r : rows) key += std::to_string(r) + ",";
      samples.insert(key);
    }
  }
  EXPECT_EQ(samples.size(), 6u) << "each (batch, head) draws its own rows";

  // A problem past 2^30 multiply-adds is checked at those rows only: the rest may hold anything.
  HostAttention p(DType::bf16, 1, 2, 1, 4096, 128, true);
  p.fill(Distribution::normal);
  for (std::int64_t i = 0; i < 2 * 4096 * 128; ++i) p.o.poison(i);
  std::memset(p.lse.data(), kFloatPoisonByte, p.lse.size() * sizeof(float));
  const AttentionTensors t = p.tensors();
  for (std::int64_t h = 0; h < 2; ++h) {
    for (const std::int64_t row : attention_checked_rows(4096, 0, h, false)) {
      const AttentionRowReference ref = reference_attention_row(t, 0, h, row);
      for (std::int64_t d = 0; d < 128; ++d) p.o.set((h * 4096 + row) * 128 + d, ref.o[static_cast<std::size_t>(d)]);
      p.lse[static_cast<std::size_t>(h * 4096 + row)] = static_cast<float>(ref.lse);
    }
  }
  const Comparison c = check_attention(p.tensors());
  EXPECT_TRUE(c.passed()) << c.summary();
  EXPECT_EQ(c.count, 2 * (kAttentionSampledRows + 2) * (128 + 1));
}

// The planted rows' partner key scores about 32 above every other key of the row, so the row's
// softmax is one-hot to within e^-15 or so and O's row is the partner's V row.
TEST(AttentionInputs, PlantedRowsAreOneHotOnTheirPartnerKey) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (Distribution distribution : {Distribution::uniform, Distribution::normal, Distribution::large_magnitude}) {
      for (const std::int64_t head_dim : {64, 128}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " " + to_string(distribution) + " " + std::to_string(head_dim));
        const std::int64_t seq = kAttentionPlantPeriod * head_dim;  // the longest strictly one-hot sequence
        HostAttention p(dtype, 1, 1, 1, seq, head_dim, true);
        p.fill(distribution);
        const AttentionTensors t = p.tensors();
        std::vector<double> q(static_cast<std::size_t>(seq * head_dim)), k(q.size());
        double v_max = 0;
        for (std::int64_t i = 0; i < seq * head_dim; ++i) {
          q[static_cast<std::size_t>(i)] = p.q.get(i);
          k[static_cast<std::size_t>(i)] = p.k.get(i);
          v_max = std::max(v_max, std::fabs(p.v.get(i)));
        }
        int planted = 0;
        double smallest_gap = INFINITY, largest_gap = 0;
        for (std::int64_t i = 0; i < seq; ++i) {
          if (!attention_planted_query(i)) continue;
          ++planted;
          const std::int64_t partner = attention_partner_key(i);
          ASSERT_LE(partner, i);
          std::vector<double> scores;
          for (std::int64_t j = 0; j <= i; ++j) {
            double dot = 0;
            for (std::int64_t d = 0; d < head_dim; ++d)
              dot += q[static_cast<std::size_t>(i * head_dim + d)] * k[static_cast<std::size_t>(j * head_dim + d)];
            scores.push_back(t.scale * dot);
          }
          const double best = scores[static_cast<std::size_t>(partner)];
          double second = -INFINITY;
          for (std::int64_t j = 0; j <= i; ++j)
            if (j != partner) second = std::max(second, scores[static_cast<std::size_t>(j)]);
          smallest_gap = std::min(smallest_gap, best - second);
          largest_gap = std::max(largest_gap, best - second);
          const AttentionRowReference ref = reference_attention_row(t, 0, 0, i);
          EXPECT_NEAR(ref.lse, best, 1e-5) << "row " << i;
          for (std::int64_t d = 0; d < head_dim; ++d)
            EXPECT_NEAR(ref.o[static_cast<std::size_t>(d)], p.v.get(partner * head_dim + d), 1e-5 * v_max)
                << "row " << i;
        }
        EXPECT_EQ(planted, head_dim) << "every 7th row";
        EXPECT_GT(smallest_gap, 15);
        EXPECT_LT(largest_gap, 45);
      }
    }
  }
}

TEST(AttentionRegistry, LadderParametersAndWork) {
  const Op* op = builtin_registry().find_op(ids::kForward);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->dim_names, (std::vector<std::string>{"batch", "heads", "seq", "head_dim"}));
  EXPECT_EQ(op->dtypes.front(), DType::bf16);
  std::vector<std::string> order;
  for (const Variant& v : op->variants) order.push_back(v.id);
  EXPECT_EQ(order, (std::vector<std::string>{ids::kNaive, ids::kTutorial, ids::kTutorialFixed, ids::kTiled, ids::kMma,
                                             ids::kMmaPipelined, ids::kWgmma, ids::kWgmmaPingPong, ids::kCublas}));
  EXPECT_EQ(op->find_variant(ids::kTutorial)->role, Role::broken);
  EXPECT_FALSE(op->find_variant(ids::kMma)->supports(DType::f32));
  EXPECT_EQ(op->find_variant(ids::kMmaPipelined)->engine, Engine::tensor_cores);
  EXPECT_TRUE(op->find_variant(ids::kNaive)->workspace_bytes);

  DeviceInfo hopper;
  hopper.compute_major = 9;
  const Variant& tiled = *op->find_variant(ids::kTiled);
  const auto with = [&](double causal, double kv_heads) {
    return op->problem({2, 8, 100, 64}, DType::bf16, {{ids::kCausal, causal}, {ids::kKvHeads, kv_heads}});
  };
  EXPECT_EQ(why_not(tiled, hopper, with(0, 0)), "");
  EXPECT_EQ(why_not(tiled, hopper, with(1, 2)), "");
  EXPECT_EQ(why_not(tiled, hopper, with(1, 8)), "");
  for (const Variant& v : op->variants) {
    EXPECT_NE(why_not(v, hopper, with(0, 3)).find("kv_heads"), std::string::npos) << v.id;
    EXPECT_NE(why_not(v, hopper, with(0, 16)).find("kv_heads"), std::string::npos) << v.id;
    EXPECT_NE(why_not(v, hopper, with(2, 0)).find("causal"), std::string::npos) << v.id;
  }
  // The mma rungs refuse the head_dims other than 64 and 128, which the Hopper rungs take (every
  // 16-bit test problem); every CUDA-core rung takes every test problem (the tutorial's, every one
  // without a window up to head_dim 128).
  for (const Problem& p : op->test_problems) {
    const bool windowed = p.param(ids::kWindowLeft) >= 0 || p.param(ids::kWindowRight) >= 0;
    for (const char* id : {ids::kNaive, ids::kTutorialFixed, ids::kTiled}) {
      if (id != ids::kTutorialFixed || (!windowed && p.dim("head_dim") <= 128)) {
        EXPECT_EQ(why_not(*op->find_variant(id), hopper, p), "") << id << " " << p.label();
      }
    }
    if (p.dtype == DType::f32) continue;
    if (p.dim("head_dim") != 64 && p.dim("head_dim") != 128) {
      EXPECT_NE(why_not(*op->find_variant(ids::kMma), hopper, p), "") << p.label();
    }
    const std::string why = why_not(*op->find_variant(ids::kWgmma), hopper, p);  // or: no sm_90a code built
    EXPECT_EQ(why.find("head_dim"), std::string::npos) << p.label() << ": " << why;
  }
  // The Hopper rungs refuse any other GPU, with the reason (or, in a build without sm_90a code, say so).
  DeviceInfo ampere;
  ampere.compute_major = 8;
  for (const char* id : {ids::kWgmma, ids::kWgmmaPingPong}) {
    const std::string why = why_not(*op->find_variant(id), ampere, with(0, 0));
    EXPECT_TRUE(why.find("9.0") != std::string::npos || why.find("sm_90a") != std::string::npos) << id << ": " << why;
    EXPECT_FALSE(op->find_variant(id)->supports(DType::f32)) << id;
  }

  // The backward: its rungs and baseline, O and L as inputs computed from Q, K and V, 2.5x the
  // forward's flops.
  const Op* backward = builtin_registry().find_op(ids::kBackward);
  ASSERT_NE(backward, nullptr);
  std::vector<std::string> backward_order;
  for (const Variant& v : backward->variants) backward_order.push_back(v.id);
  EXPECT_EQ(backward_order, (std::vector<std::string>{ids::kNaive, ids::kMma, ids::kWgmma, ids::kCublas}));
  EXPECT_TRUE(backward->derive_inputs);
  // The Hopper backward runs where the forward's Hopper rungs do: not on an sm_80 GPU, not in f32.
  const Variant* hopper_backward = backward->find_variant(ids::kWgmma);
  ASSERT_NE(hopper_backward, nullptr);
  EXPECT_FALSE(hopper_backward->supports(DType::f32));
  EXPECT_NE(attention_variants::wgmma_backward_limits({2, 8, 2, 100, 64, 2, 80}), "");
  const Problem backward_problem =
      backward->problem({2, 8, 100, 64}, DType::bf16, {{ids::kCausal, 1}, {ids::kKvHeads, 2}});
  EXPECT_DOUBLE_EQ(backward->work(backward_problem).flops, 2.5 * op->work(with(1, 2)).flops);

  // The window's parameters: -1 or whole numbers >= 0, refused otherwise by every rung; the
  // tutorial's kernels refuse a window that binds.
  const auto windowed = [&](double left, double right) {
    return op->problem({2, 8, 100, 64}, DType::bf16,
                       {{ids::kCausal, 1}, {ids::kWindowLeft, left}, {ids::kWindowRight, right}});
  };
  for (const Variant& v : op->variants) {
    EXPECT_NE(why_not(v, hopper, windowed(-2, -1)).find("window_left"), std::string::npos) << v.id;
    EXPECT_NE(why_not(v, hopper, windowed(-1, 2.5)).find("window_right"), std::string::npos) << v.id;
  }
  EXPECT_NE(why_not(*op->find_variant(ids::kTutorialFixed), hopper, windowed(10, -1)), "");
  EXPECT_EQ(why_not(*op->find_variant(ids::kTutorialFixed), hopper, windowed(99, -1)), "") << "wider than seq";
  EXPECT_EQ(why_not(tiled, hopper, windowed(10, -1)), "");
  // A causal window of 10 back: row i sees min(i + 1, 11) keys.
  double pairs = 0;
  for (int i = 0; i < 100; ++i) pairs += std::min(i + 1, 11);
  EXPECT_DOUBLE_EQ(op->work(windowed(10, -1)).flops, 4.0 * 2 * 8 * pairs * 64);
  EXPECT_DOUBLE_EQ(
      backward->work(backward->problem({2, 8, 100, 64}, DType::bf16, {{ids::kCausal, 1}, {ids::kWindowLeft, 10}}))
          .flops,
      2.5 * op->work(windowed(10, -1)).flops);

  // 4 B H S^2 D flops, halved when causal; Q, K, V read; O and fp32 L written.
  const Work full = op->work(with(0, 2)), causal = op->work(with(1, 2));
  EXPECT_DOUBLE_EQ(full.flops, 4.0 * 2 * 8 * 100 * 100 * 64);
  EXPECT_DOUBLE_EQ(causal.flops, full.flops / 2);
  EXPECT_DOUBLE_EQ(full.bytes_read, 2.0 * (2 * 8 * 100 * 64 + 2 * 2 * 2 * 100 * 64));
  EXPECT_DOUBLE_EQ(full.bytes_written, 2.0 * 2 * 8 * 100 * 64 + 4.0 * 2 * 8 * 100);
}

// ---- library argument checks ----

TEST(AttentionLibrary, ValidatesBeforeTouchingTheGpu) {
  using test_support::thrown_kind;
  const auto kInvalid = ErrorKind::invalid_argument;
  // Addresses that are never dereferenced: every call below throws (or returns) before a launch.
  const auto at = [](std::uintptr_t address) { return reinterpret_cast<__nv_bfloat16*>(address); };
  __nv_bfloat16 *q = at(0x100000), *k = at(0x200000), *v = at(0x300000), *o = at(0x400000), *d_o = at(0x500000);
  __nv_bfloat16 *dq = at(0x600000), *dk = at(0x700000), *dv = at(0x800000);
  auto* lse = reinterpret_cast<float*>(std::uintptr_t{0x900000});
  const AttentionDims good{1, 2, 2, 8, 64};
  const auto backward = [&](const AttentionDims& d, AttentionOptions options, const __nv_bfloat16* query,
                            __nv_bfloat16* grad_q) {
    return thrown_kind([&] { attention_backward(query, k, v, o, lse, d_o, grad_q, dk, dv, d, options); });
  };
  EXPECT_EQ(backward({1, -2, 2, 8, 64}, {}, q, dq), kInvalid) << "negative heads";
  EXPECT_EQ(backward({1, 3, 2, 8, 64}, {}, q, dq), kInvalid) << "3 heads over 2 kv heads";
  EXPECT_EQ(backward({1, 2, 0, 8, 64}, {}, q, dq), kInvalid) << "no kv heads";
  EXPECT_EQ(backward({1 << 20, 1 << 20, 1 << 20, 1 << 20, 64}, {}, q, dq), kInvalid) << "sizes past 64 bits";
  EXPECT_EQ(backward(good, {NAN, false, {}}, q, dq), kInvalid) << "a NaN scale";
  EXPECT_EQ(backward(good, {-0.5f, true, {}}, q, dq), kInvalid) << "a negative scale";
  EXPECT_EQ(backward(good, {0.0f, true, {}, -2, -1}, q, dq), kInvalid) << "a window side below -1";
  EXPECT_EQ(thrown_kind([&] {
              attention_forward(q, k, v, o, lse, good, {0.0f, false, {}, 4, -3});
            }),
            kInvalid)
      << "a window side below -1";
  EXPECT_EQ(backward(good, {}, q, nullptr), kInvalid) << "dq null";
  EXPECT_EQ(backward(good, {}, q, q), kInvalid) << "dq is q";
  EXPECT_EQ(backward(good, {}, at(0x100001), dq), kInvalid) << "q off its element's alignment";
  EXPECT_EQ(thrown_kind([&] { attention_backward(q, k, v, o, lse, d_o, dq, dk, dk, good); }), kInvalid) << "dv is dk";
  EXPECT_EQ(thrown_kind([&] { attention_forward(q, k, v, o, lse, {1, 3, 2, 8, 64}); }), kInvalid);
  // Empty problems take no workspace and do nothing, null pointers included.
  for (const AttentionDims& d : {AttentionDims{0, 2, 2, 8, 64}, AttentionDims{1, 2, 2, 8, 0}}) {
    EXPECT_EQ(attention_backward_workspace_bytes(d, DType::f32), 0u);
    EXPECT_NO_THROW(attention_backward<float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                              nullptr, d, {}, nullptr, 0));
  }
  EXPECT_EQ(thrown_kind([&] { attention_backward_workspace_bytes(good, DType::i32); }), kInvalid);
  EXPECT_EQ(thrown_kind([&] { attention_backward_workspace_bytes({-1, 2, 2, 8, 64}, DType::bf16); }), kInvalid);
}

TEST(AttentionLibrary, DecodeValidatesBeforeTouchingTheGpu) {
  using test_support::thrown_kind;
  const auto kInvalid = ErrorKind::invalid_argument;
  const auto at = [](std::uintptr_t address) { return reinterpret_cast<__nv_bfloat16*>(address); };
  __nv_bfloat16 *q = at(0x100000), *k = at(0x200000), *v = at(0x300000), *o = at(0x400000);
  auto* lengths = reinterpret_cast<const std::int32_t*>(std::uintptr_t{0x500000});
  auto* lse = reinterpret_cast<float*>(std::uintptr_t{0x600000});
  const auto decode = [&](const AttentionDecodeDims& d, AttentionOptions options = {}, __nv_bfloat16* out = nullptr) {
    return thrown_kind([&] { attention_decode(q, k, v, lengths, out != nullptr ? out : o, lse, d, options); });
  };
  EXPECT_EQ(decode({1, -4, 2, 1, 64, 128}), kInvalid) << "negative heads";
  EXPECT_EQ(decode({1, 3, 2, 1, 64, 128}), kInvalid) << "3 heads over 2 kv heads";
  EXPECT_EQ(decode({1, 4, 2, 65, 64, 128}), kInvalid) << "more new tokens than the cache holds";
  EXPECT_EQ(decode({1, 4, 2, 1, 64, 300}), kInvalid) << "head_dim past 256";
  EXPECT_EQ(decode({1 << 20, 1 << 20, 1 << 20, 1, 1 << 20, 128}), kInvalid) << "sizes past 64 bits";
  AttentionOptions strided;
  strided.layout.q = {1024, 128, 128};
  EXPECT_EQ(decode({1, 4, 2, 1, 64, 128}, strided), kInvalid) << "a layout";
  EXPECT_EQ(decode({1, 4, 2, 1, 64, 128}, {NAN, true, {}}), kInvalid) << "a NaN scale";
  EXPECT_EQ(decode({1, 4, 2, 1, 64, 128}, {0.0f, true, {}, -2, -1}), kInvalid) << "a window side below -1";
  EXPECT_EQ(decode({1, 4, 2, 1, 64, 128}, {}, q), kInvalid) << "o is q";
  EXPECT_EQ(decode({1, 4, 2, 1, 64, 128}, {}, at(0x400001)), kInvalid) << "o off its element's alignment";
  EXPECT_EQ(thrown_kind([&] {
              attention_decode<float>(nullptr, nullptr, nullptr, lengths, nullptr, nullptr, {1, 4, 2, 1, 64, 128});
            }),
            kInvalid)
      << "null arrays";
  // Nothing to compute: no error, null pointers included.
  EXPECT_NO_THROW(attention_decode<float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, {0, 4, 2, 1, 64, 128}));
  // Paged: a page size that is not positive or does not divide the cache, negative pages, no table.
  auto* table = reinterpret_cast<const std::int32_t*>(std::uintptr_t{0x700000});
  const auto paged = [&](AttentionDecodePages pages) {
    return thrown_kind([&] { attention_decode_paged(q, k, v, pages, lengths, o, lse, {2, 4, 2, 1, 256, 128}); });
  };
  EXPECT_EQ(paged({table, 0, 8}), kInvalid) << "pages of no keys";
  EXPECT_EQ(paged({table, 100, 8}), kInvalid) << "pages of 100 keys in a cache of 256";
  EXPECT_EQ(paged({table, 64, -1}), kInvalid) << "negative pages";
  EXPECT_EQ(paged({nullptr, 64, 8}), kInvalid) << "no block table";
  EXPECT_EQ(thrown_kind([&] { attention_decode_workspace_bytes({1, 4, 2, 1, 64, 128}, DType::i32); }), kInvalid);
  EXPECT_EQ(thrown_kind([&] { attention_decode_workspace_bytes({1, -4, 2, 1, 64, 128}, DType::bf16); }), kInvalid);
  EXPECT_EQ(attention_decode_workspace_bytes({0, 4, 2, 1, 64, 128}, DType::bf16), 0u) << "nothing to compute";
}

// A decode row is the self-attention row at its position over the sequence's first lengths[b] keys:
// the cache's rows past them (filled with huge values here) are never read.
TEST(AttentionReference, DecodeRowsAreTheLastRowsOfSelfAttention) {
  constexpr std::int64_t kLength = 7, kCache = 10, kTokens = 3, kDim = 8;
  std::vector<float> q(2 * kLength * kDim), k(kCache * kDim, 1e30f), v(kCache * kDim, 1e30f);
  std::uint64_t state = 42;
  const auto draw = [&] { return static_cast<float>((state = mix64(state)) >> 40) * 0x1p-23f - 1.0f; };
  for (float& x : q) x = draw();
  for (std::int64_t i = 0; i < kLength * kDim; ++i) k[static_cast<std::size_t>(i)] = draw();
  for (std::int64_t i = 0; i < kLength * kDim; ++i) v[static_cast<std::size_t>(i)] = draw();
  // The decode queries: each head's last kTokens rows of q.
  std::vector<float> q_new(2 * kTokens * kDim);
  for (std::int64_t h = 0; h < 2; ++h)
    std::copy_n(q.begin() + (h * kLength + kLength - kTokens) * kDim, kTokens * kDim,
                q_new.begin() + h * kTokens * kDim);
  AttentionTensors self;
  self.q = q.data(), self.k = k.data(), self.v = v.data();
  self.batch = 1, self.heads = 2, self.kv_heads = 1, self.seq = kLength, self.head_dim = kDim;
  self.scale = 0.35f, self.causal = true;
  const std::int32_t lengths[] = {kLength};
  AttentionTensors decode = self;
  decode.q = q_new.data(), decode.seq = kCache, decode.queries = kTokens, decode.lengths = lengths;
  for (const bool causal : {true, false}) {
    self.causal = decode.causal = causal;
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t t = 0; t < kTokens; ++t) {
        const AttentionRowReference a = reference_attention_row(decode, 0, h, t);
        const AttentionRowReference b = reference_attention_row(self, 0, h, causal ? kLength - kTokens + t : t);
        const AttentionRowReference c = reference_attention_row(self, 0, h, kLength - kTokens + t);
        EXPECT_EQ(a.o, causal ? b.o : c.o) << "head " << h << ", token " << t << (causal ? ", causal" : "");
        EXPECT_EQ(a.lse, causal ? b.lse : c.lse);
      }
  }
  // A sliding window of 2 keys back: a causal decode row is the windowed self-attention row at its
  // position, and differs from the unwindowed one.
  self.causal = decode.causal = true;
  self.window_left = decode.window_left = 2;
  for (std::int64_t t = 0; t < kTokens; ++t) {
    const AttentionRowReference a = reference_attention_row(decode, 0, 1, t);
    const AttentionRowReference b = reference_attention_row(self, 0, 1, kLength - kTokens + t);
    EXPECT_EQ(a.o, b.o) << "token " << t;
    EXPECT_EQ(a.lse, b.lse);
    AttentionTensors unwindowed = self;
    unwindowed.window_left = -1;
    EXPECT_NE(a.lse, reference_attention_row(unwindowed, 0, 1, kLength - kTokens + t).lse);
  }
}

// The decode op: its ladder and baseline, the lengths its problems give and the work they count.
TEST(AttentionDecodeOp, CountsTheKeysEachSequenceHolds) {
  const Op* op = builtin_registry().find_op(ids::kDecode);
  ASSERT_NE(op, nullptr);
  std::vector<std::string> order;
  for (const Variant& v : op->variants) order.push_back(v.id);
  EXPECT_EQ(order, (std::vector<std::string>{ids::kNaive, ids::kSplitMma, ids::kCublas}));
  const auto problem = [&](int ragged) {
    return op->problem({3, 8, 2, 100, 64}, DType::bf16, {{ids::kKvHeads, 2}, {ids::kRagged, double(ragged)}});
  };
  // Full caches: 3 sequences x 2 kv heads x 100 keys of K and V; causal queries see 99 and 100 keys.
  const Work full = op->work(problem(0));
  EXPECT_DOUBLE_EQ(full.bytes_read, 2.0 * (3 * 8 * 2 * 64 + 2.0 * 3 * 2 * 100 * 64) + 4.0 * 3);
  EXPECT_DOUBLE_EQ(full.flops, 4.0 * 3 * 8 * (99 + 100) * 64);
  // Ragged: fewer keys after the first sequence, never fewer than the new tokens.
  const Work ragged = op->work(problem(1));
  EXPECT_LT(ragged.bytes_read, full.bytes_read);
  EXPECT_GE(ragged.bytes_read, 2.0 * (3 * 8 * 2 * 64 + 2.0 * (100 + 2 + 2) * 2 * 64) + 4.0 * 3);
  // split_mma packs (heads / kv_heads) x tokens rows in one m16 tile, at head_dim 64 or 128 only.
  DeviceInfo hopper;
  hopper.compute_major = 9;
  EXPECT_EQ(why_not(*op->find_variant(ids::kSplitMma), hopper, problem(0)), "");
  EXPECT_NE(why_not(*op->find_variant(ids::kSplitMma), hopper,
                    op->problem({1, 16, 4, 100, 64}, DType::bf16, {{ids::kKvHeads, 2}})),
            "");
  EXPECT_NE(why_not(*op->find_variant(ids::kNaive), hopper, op->problem({1, 2, 3, 2, 64}, DType::bf16)), "")
      << "3 new tokens in a cache of 2";
  // Paged caches: any page size that divides the cache on naive, multiples of 64 keys on split_mma,
  // none on the cuBLAS baseline; the same bytes as dense caches.
  const auto paged = [&](int page) {
    return op->problem({2, 8, 1, 1200, 64}, DType::bf16, {{ids::kPage, static_cast<double>(page)}});
  };
  EXPECT_EQ(why_not(*op->find_variant(ids::kNaive), hopper, paged(100)), "");
  EXPECT_NE(why_not(*op->find_variant(ids::kNaive), hopper, paged(7)), "") << "7 does not divide 1200";
  EXPECT_NE(why_not(*op->find_variant(ids::kSplitMma), hopper, paged(100)), "");
  EXPECT_NE(why_not(*op->find_variant(ids::kCublas), hopper, paged(100)), "");
  EXPECT_DOUBLE_EQ(op->work(paged(100)).bytes_read, op->work(paged(0)).bytes_read);
  EXPECT_EQ(op->problem({2, 8, 1, 1280, 64}, DType::bf16, {{ids::kPage, 64}}).param(ids::kPage), 64);
  EXPECT_EQ(why_not(*op->find_variant(ids::kSplitMma), hopper,
                    op->problem({2, 8, 1, 1280, 64}, DType::bf16, {{ids::kKvHeads, 2}, {ids::kPage, 64}})),
            "");
}

// seq^2 of a long sequence would overflow 64 bits inside the check itself: seq is refused first.
TEST(AttentionBackwardLimits, NaiveRefusesASequenceWhoseSquareOverflows) {
  const attention_variants::AttentionShape shape{1, 1, 1, std::int64_t{1} << 33, 64, 2, 90};
  EXPECT_FALSE(attention_variants::naive_backward_limits(shape).empty());
}

}  // namespace
}  // namespace cudalab::harness
