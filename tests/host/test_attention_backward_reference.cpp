// The attention backward's check without a GPU: gradients found by central differences of the
// loss sum(dO * O) through a double-precision forward, independent of the check's formulas, pass
// it (causal and not, with a kv head shared by two query heads); one perturbed past its bound,
// and one never written, fail.
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cudalab/dtype.hpp"
#include "harness/random.hpp"
#include "ops/attention/reference.hpp"
#include "typed_array.hpp"

namespace cudalab::harness {
namespace {

using Array = cudalab::test_support::TypedArray;

constexpr std::int64_t kBatch = 1, kHeads = 2, kKvHeads = 1, kSeq = 3, kDim = 4;
constexpr std::int64_t kQCount = kBatch * kHeads * kSeq * kDim, kKvCount = kBatch * kKvHeads * kSeq * kDim;

struct Inputs {
  std::vector<double> q, k, v, d_o;
};

// O (and each row's log-sum-exp) of the inputs in double.
void forward(const Inputs& in, bool causal, double scale, std::vector<double>& o, std::vector<double>& lse) {
  o.assign(static_cast<std::size_t>(kQCount), 0.0);
  lse.assign(static_cast<std::size_t>(kBatch * kHeads * kSeq), 0.0);
  for (std::int64_t bh = 0; bh < kBatch * kHeads; ++bh) {
    const std::int64_t kv = (bh / kHeads) * kKvHeads + (bh % kHeads) / (kHeads / kKvHeads);
    for (std::int64_t i = 0; i < kSeq; ++i) {
      const std::int64_t keys = causal ? i + 1 : kSeq;
      std::vector<double> s(static_cast<std::size_t>(keys));
      double max = -INFINITY;
      for (std::int64_t j = 0; j < keys; ++j) {
        double dot = 0.0;
        for (std::int64_t d = 0; d < kDim; ++d)
          dot += in.q[static_cast<std::size_t>((bh * kSeq + i) * kDim + d)] *
                 in.k[static_cast<std::size_t>((kv * kSeq + j) * kDim + d)];
        s[static_cast<std::size_t>(j)] = scale * dot;
        max = std::max(max, scale * dot);
      }
      double sum = 0.0;
      for (double& x : s) sum += (x = std::exp(x - max));
      for (std::int64_t j = 0; j < keys; ++j)
        for (std::int64_t d = 0; d < kDim; ++d)
          o[static_cast<std::size_t>((bh * kSeq + i) * kDim + d)] +=
              s[static_cast<std::size_t>(j)] / sum * in.v[static_cast<std::size_t>((kv * kSeq + j) * kDim + d)];
      lse[static_cast<std::size_t>(bh * kSeq + i)] = max + std::log(sum);
    }
  }
}

double loss(const Inputs& in, bool causal, double scale) {
  std::vector<double> o, lse;
  forward(in, causal, scale, o, lse);
  double total = 0.0;
  for (std::size_t i = 0; i < o.size(); ++i) total += in.d_o[i] * o[i];
  return total;
}

// d loss / d x[i] for every element of `x` (one of in's arrays) by central differences.
std::vector<double> gradient(Inputs in, std::vector<double> Inputs::*x, bool causal, double scale) {
  constexpr double kStep = 1e-5;
  std::vector<double> out((in.*x).size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double saved = (in.*x)[i];
    (in.*x)[i] = saved + kStep;
    const double up = loss(in, causal, scale);
    (in.*x)[i] = saved - kStep;
    const double down = loss(in, causal, scale);
    (in.*x)[i] = saved;
    out[i] = (up - down) / (2 * kStep);
  }
  return out;
}

struct Case {
  Array q{DType::f32, kQCount}, k{DType::f32, kKvCount}, v{DType::f32, kKvCount}, o{DType::f32, kQCount},
      d_o{DType::f32, kQCount}, dq{DType::f32, kQCount}, dk{DType::f32, kKvCount}, dv{DType::f32, kKvCount};
  std::vector<float> lse = std::vector<float>(static_cast<std::size_t>(kBatch * kHeads * kSeq));
  bool causal;

  explicit Case(bool c) : causal(c) {
    const float scale = attention_default_scale(kDim);
    Inputs in;
    const auto draw = [](Array& a, std::vector<double>& x, std::uint64_t seed, std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) {
        a.set(i, 2.0 * random_value(seed, i, n, Distribution::uniform));
        x.push_back(a.get(i));
      }
    };
    draw(q, in.q, 1, kQCount);
    draw(k, in.k, 2, kKvCount);
    draw(v, in.v, 3, kKvCount);
    draw(d_o, in.d_o, 4, kQCount);
    std::vector<double> o_ref, lse_ref;
    forward(in, causal, scale, o_ref, lse_ref);
    for (std::int64_t i = 0; i < kQCount; ++i) o.set(i, o_ref[static_cast<std::size_t>(i)]);
    for (std::size_t i = 0; i < lse.size(); ++i) lse[i] = static_cast<float>(lse_ref[i]);
    const auto store = [](Array& a, const std::vector<double>& g) {
      for (std::size_t i = 0; i < g.size(); ++i) a.set(static_cast<std::int64_t>(i), g[i]);
    };
    store(dq, gradient(in, &Inputs::q, causal, scale));
    store(dk, gradient(in, &Inputs::k, causal, scale));
    store(dv, gradient(in, &Inputs::v, causal, scale));
  }

  AttentionBackwardTensors tensors() const {
    AttentionBackwardTensors t;
    t.dtype = DType::f32;
    t.q = q.data();
    t.k = k.data();
    t.v = v.data();
    t.o = o.data();
    t.d_o = d_o.data();
    t.lse = lse.data();
    t.dq = dq.data();
    t.dk = dk.data();
    t.dv = dv.data();
    t.batch = kBatch;
    t.heads = kHeads;
    t.kv_heads = kKvHeads;
    t.seq = kSeq;
    t.head_dim = kDim;
    t.scale = attention_default_scale(kDim);
    t.causal = causal;
    return t;
  }
};

TEST(AttentionBackwardCheck, AcceptsCentralDifferencesOfTheForward) {
  for (const bool causal : {false, true}) {
    const Case c(causal);
    const Comparison result = check_attention_backward(c.tensors());
    EXPECT_TRUE(result.passed()) << "causal " << causal << ": " << result.summary();
    EXPECT_EQ(result.count, kQCount + 2 * kKvCount);
  }
}

TEST(AttentionBackwardCheck, RejectsAPerturbedAndAnUnwrittenGradient) {
  Case perturbed(true);
  perturbed.dk.set(5, perturbed.dk.get(5) * (1 + 1e-3) + 1e-6);
  Comparison result = check_attention_backward(perturbed.tensors());
  EXPECT_EQ(result.mismatches, 1) << result.summary();
  EXPECT_EQ(result.first_mismatch, kQCount + 5);

  Case unwritten(false);
  unwritten.dv.poison(2);
  result = check_attention_backward(unwritten.tensors());
  EXPECT_EQ(result.unwritten, 1) << result.summary();
  EXPECT_EQ(result.first_mismatch, kQCount + kKvCount + 2);
}

}  // namespace
}  // namespace cudalab::harness
