// The normalization ops without a GPU: the CPU reference against values worked by hand and
// against finite differences of the forward, the checks' bounds against an fp32 emulation of the
// kernels' arithmetic (which must pass, also on rows at 1e4 + noise) and of the tutorial's
// unshifted mean (which must fail there), the registry entries, and the library calls' argument
// checks (which come before any CUDA call).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "error_kind.hpp"

#include "cudalab/device.hpp"
#include "cudalab/dtype.hpp"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/norms/ids.hpp"
#include "ops/norms/reference.hpp"
#include "ops/norms/variants.hpp"

namespace cudalab::harness {
namespace {

using norms_variants::Norm;

// A host tensor of `dtype` built from doubles (rounded to nearest even).
struct HostTensor {
  DType dtype = DType::f32;
  std::vector<unsigned char> bytes;

  HostTensor(DType type, const std::vector<double>& values) : dtype(type), bytes(values.size() * size_of(type)) {
    for (std::size_t i = 0; i < values.size(); ++i) element_from_double(dtype, values[i], bytes.data(), i);
  }
  double operator[](std::size_t i) const {
    return element_to_double(dtype, bytes.data(), static_cast<std::int64_t>(i));
  }
  void set(std::size_t i, double v) { element_from_double(dtype, v, bytes.data(), i); }
  void poison(std::size_t i) { std::memset(bytes.data() + i * size_of(dtype), kFloatPoisonByte, size_of(dtype)); }
  const void* data() const { return bytes.data(); }
};

std::vector<float> to_floats(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// A pairwise fp32 sum: the tree order the kernels' reductions approximate.
float pairwise_sum(const float* v, std::size_t n) {
  if (n == 0) return 0.0f;
  if (n == 1) return v[0];
  const std::size_t half = n / 2;
  return pairwise_sum(v, half) + pairwise_sum(v + half, n - half);
}

// The forward's outputs as the kernels compute them, in fp32: statistics shifted by x[0] (or, to
// show why, the tutorial's unshifted mean), y rounded to `dtype`.
struct Forward {
  std::vector<double> y, mean, rstd;
};

Forward emulate_forward(Norm norm, DType dtype, std::int64_t rows, std::int64_t features, const HostTensor& x,
                        const HostTensor& gamma, const HostTensor* beta, float eps, bool shifted = true) {
  Forward out;
  const float inverse_count = 1.0f / static_cast<float>(features);
  std::vector<float> terms(static_cast<std::size_t>(features));
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto at = [&](std::int64_t j) { return static_cast<float>(x[static_cast<std::size_t>(r * features + j)]); };
    float rstd = 0.0f, mean_d = 0.0f;
    const float pivot = norm == Norm::layer && shifted ? at(0) : 0.0f;
    if (norm == Norm::layer) {
      for (std::int64_t j = 0; j < features; ++j) terms[j] = at(j) - pivot;
      mean_d = pairwise_sum(terms.data(), terms.size()) * inverse_count;
      for (std::int64_t j = 0; j < features; ++j) terms[j] = (at(j) - pivot - mean_d) * (at(j) - pivot - mean_d);
    } else {
      for (std::int64_t j = 0; j < features; ++j) terms[j] = at(j) * at(j);
    }
    rstd = 1.0f / std::sqrt(pairwise_sum(terms.data(), terms.size()) * inverse_count + eps);
    for (std::int64_t j = 0; j < features; ++j) {
      const auto g = static_cast<float>(gamma[static_cast<std::size_t>(j)]);
      const float y = norm == Norm::layer ? std::fma((at(j) - pivot - mean_d) * rstd, g, static_cast<float>((*beta)[j]))
                                          : at(j) * rstd * g;
      unsigned char rounded[8];
      element_from_double(dtype, y, rounded, 0);
      out.y.push_back(element_to_double(dtype, rounded, 0));
    }
    out.mean.push_back(pivot + mean_d);
    out.rstd.push_back(rstd);
  }
  return out;
}

Comparison check_forward(Norm norm, DType dtype, std::int64_t rows, std::int64_t features, double eps,
                         const HostTensor& x, const HostTensor& gamma, const HostTensor* beta, const HostTensor& y,
                         const std::vector<float>& mean, const std::vector<float>& rstd) {
  NormForwardHost h;
  h.norm = norm;
  h.dtype = dtype;
  h.rows = rows;
  h.features = features;
  h.eps = eps;
  h.x = x.data();
  h.gamma = gamma.data();
  h.beta = beta != nullptr ? beta->data() : nullptr;
  h.y = y.data();
  h.mean = norm == Norm::layer ? mean.data() : nullptr;
  h.rstd = rstd.data();
  return check_norm_forward(h);
}

std::vector<double> random_values(std::size_t n, double low, double high, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> u(low, high);
  std::vector<double> v(n);
  for (double& e : v) e = u(engine);
  return v;
}

TEST(NormsReference, LayerNormOfARowWorkedByHand) {
  // x = 1, 2, 3, 4: mean 2.5, biased variance 1.25.
  const HostTensor x(DType::f32, {1, 2, 3, 4}), gamma(DType::f32, {1, 1, 1, 1}), beta(DType::f32, {0, 0, 0, 0});
  const double eps = static_cast<float>(1e-5);
  const double rstd = 1.0 / std::sqrt(1.25 + eps);
  HostTensor y(DType::f32, {-1.5 * rstd, -0.5 * rstd, 0.5 * rstd, 1.5 * rstd});
  const std::vector<float> mean = {2.5f}, saved_rstd = {static_cast<float>(rstd)};
  const Comparison good = check_forward(Norm::layer, DType::f32, 1, 4, 1e-5, x, gamma, &beta, y, mean, saved_rstd);
  EXPECT_TRUE(good.passed()) << good.summary();
  y.set(2, y[2] + 1e-4);
  const Comparison bad = check_forward(Norm::layer, DType::f32, 1, 4, 1e-5, x, gamma, &beta, y, mean, saved_rstd);
  EXPECT_EQ(bad.mismatches, 1) << bad.summary();
  EXPECT_EQ(bad.first_mismatch, 2);
}

TEST(NormsReference, RmsNormOfARowWorkedByHand) {
  // x = 3, 4: mean square 12.5.
  const HostTensor x(DType::f32, {3, 4}), gamma(DType::f32, {2, 0.5});
  const double rstd = 1.0 / std::sqrt(12.5 + static_cast<float>(1e-6));
  const HostTensor y(DType::f32, {6 * rstd, 2 * rstd});
  const Comparison c =
      check_forward(Norm::rms, DType::f32, 1, 2, 1e-6, x, gamma, nullptr, y, {}, {static_cast<float>(rstd)});
  EXPECT_TRUE(c.passed()) << c.summary();
  // The saved rstd is an output too: a relative error of 1e-4 fails it.
  const Comparison bad =
      check_forward(Norm::rms, DType::f32, 1, 2, 1e-6, x, gamma, nullptr, y, {}, {static_cast<float>(rstd * 1.0001)});
  EXPECT_EQ(bad.mismatches, 1) << bad.summary();
  EXPECT_EQ(bad.first_mismatch, 2) << "rstd is counted after y's two elements";
}

// The add_ forms: h = x + residual, rounded to the dtype, bit for bit; y and the statistics are h's
// norm. y of x's norm (the residual forgotten) fails, and so does an h off by one bf16 ulp.
TEST(NormsReference, AddFormChecksTheSumAndNormalizesIt) {
  // bf16: x + residual = 1 + 2^-8 rounds to 1 (ties to even), 2 + 1 = 3, and so on.
  const DType dtype = DType::bf16;
  const HostTensor x(dtype, {1, 2, 3, 4}), residual(dtype, {std::ldexp(1.0, -8), 1, -1, 0.5});
  const HostTensor h(dtype, {1, 3, 2, 4.5}), gamma(dtype, {1, 1, 1, 1}), beta(dtype, {0, 0, 0, 0});
  const Forward want = emulate_forward(Norm::layer, dtype, 1, 4, h, gamma, &beta, 1e-5f);
  const Forward of_x = emulate_forward(Norm::layer, dtype, 1, 4, x, gamma, &beta, 1e-5f);
  const auto check = [&](const HostTensor& sum, const Forward& out) {
    const HostTensor y(dtype, out.y);
    const std::vector<float> mean = to_floats(out.mean), rstd = to_floats(out.rstd);
    NormForwardHost f;
    f.norm = Norm::layer;
    f.dtype = dtype;
    f.rows = 1;
    f.features = 4;
    f.eps = 1e-5;
    f.x = x.data();
    f.residual = residual.data();
    f.residual_out = sum.data();
    f.gamma = gamma.data();
    f.beta = beta.data();
    f.y = y.data();
    f.mean = mean.data();
    f.rstd = rstd.data();
    return check_norm_forward(f);
  };
  const Comparison good = check(h, want);
  EXPECT_TRUE(good.passed()) << good.summary();
  EXPECT_GT(check(h, of_x).mismatches, 0) << "y of x alone";
  HostTensor off = h;
  off.set(0, 1.0 + std::ldexp(1.0, -7));
  const Comparison bad = check(off, want);
  EXPECT_EQ(bad.mismatches, 1) << bad.summary();
  EXPECT_EQ(bad.first_mismatch, 4) << "h is counted after y's four elements";
}

// The add_ forms' backward: dx is the norm's gradient plus dresidual; without the addition it fails.
TEST(NormsReference, AddFormBackwardAddsTheResidualGradient) {
  const HostTensor h(DType::f32, {3, 4}), dy(DType::f32, {1, -1}), gamma(DType::f32, {2, 0.5});
  const HostTensor dresidual(DType::f32, {0.25, -2});
  const std::vector<float> rstd = {static_cast<float>(1.0 / std::sqrt(12.5))};
  // RMSNorm: a = g dy = (2, -0.5), xhat = x rstd, dx = rstd (a - xhat mean(a xhat)) + dresidual.
  const double r = rstd[0], c2 = (2 * 3 * r - 0.5 * 4 * r) / 2;
  const std::vector<double> plain = {r * (2 - 3 * r * c2), r * (-0.5 - 4 * r * c2)};
  const HostTensor dgamma(DType::f32, {1 * 3 * r, -1 * 4 * r});
  const auto check = [&](const HostTensor& dx) {
    NormBackwardHost b;
    b.norm = Norm::rms;
    b.rows = 1;
    b.features = 2;
    b.x = h.data();
    b.dy = dy.data();
    b.gamma = gamma.data();
    b.rstd = rstd.data();
    b.dresidual = dresidual.data();
    b.dx = dx.data();
    b.dgamma = dgamma.data();
    return check_norm_backward(b);
  };
  const Comparison good = check(HostTensor(DType::f32, {plain[0] + 0.25, plain[1] - 2}));
  EXPECT_TRUE(good.passed()) << good.summary();
  EXPECT_EQ(check(HostTensor(DType::f32, plain)).mismatches, 2) << "dresidual left out";
}

// Rows of uniform noise, rows at +-1e4 + noise, and a constant row, in every dtype: the kernels'
// shifted fp32 arithmetic passes; for LayerNorm in fp32, the tutorial's unshifted mean fails at
// the large offset (its error, up to half an ulp of 1e4, is 1e-3 relative in y).
TEST(NormsReference, KernelArithmeticPassesAndTheUnshiftedMeanFailsOnLargeOffsetRows) {
  constexpr std::int64_t kRows = 6, kFeatures = 4096;
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (Norm norm : {Norm::layer, Norm::rms}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + (norm == Norm::layer ? " layer" : " rms"));
      const double noise = dtype == DType::f32 ? 1.0 : (dtype == DType::f16 ? 64.0 : 512.0);
      std::vector<double> values = random_values(kRows * kFeatures, -1.0, 1.0, 7);
      for (std::int64_t j = 0; j < kFeatures; ++j) {
        values[2 * kFeatures + j] = 1e4 + noise * values[2 * kFeatures + j];
        values[3 * kFeatures + j] = -1e4 + noise * values[3 * kFeatures + j];
        values[5 * kFeatures + j] = 0.75;
      }
      const HostTensor x(dtype, values);
      const HostTensor gamma(dtype, random_values(kFeatures, 0.5, 1.5, 8));
      const HostTensor beta(dtype, random_values(kFeatures, -0.5, 0.5, 9));
      const double eps = norm == Norm::layer ? 1e-5 : 1e-6;
      const HostTensor* b = norm == Norm::layer ? &beta : nullptr;
      const Forward f = emulate_forward(norm, dtype, kRows, kFeatures, x, gamma, b, static_cast<float>(eps));
      const Comparison c = check_forward(norm, dtype, kRows, kFeatures, eps, x, gamma, b, HostTensor(dtype, f.y),
                                         to_floats(f.mean), to_floats(f.rstd));
      EXPECT_TRUE(c.passed()) << c.summary();
      if (norm == Norm::layer && dtype == DType::f32) {
        const Forward naive =
            emulate_forward(norm, dtype, kRows, kFeatures, x, gamma, b, static_cast<float>(eps), /*shifted=*/false);
        const Comparison n = check_forward(norm, dtype, kRows, kFeatures, eps, x, gamma, b, HostTensor(dtype, naive.y),
                                           to_floats(naive.mean), to_floats(naive.rstd));
        EXPECT_FALSE(n.passed()) << n.summary();
        EXPECT_GT(n.rel_l2_error, output_rel_l2_limit(DType::f32)) << n.summary();
      }
    }
  }
}

TEST(NormsReference, UnwrittenAndNonFiniteOutputsFail) {
  const HostTensor x(DType::bf16, {1, 2, 3, 4, 5, 6}), gamma(DType::bf16, {1, 1, 1}), beta(DType::bf16, {0, 0, 0});
  const Forward f = emulate_forward(Norm::layer, DType::bf16, 2, 3, x, gamma, &beta, 1e-5f);
  HostTensor y(DType::bf16, f.y);
  y.poison(4);
  std::vector<float> mean = to_floats(f.mean), rstd = to_floats(f.rstd);
  rstd[0] = NAN;
  const Comparison c = check_forward(Norm::layer, DType::bf16, 2, 3, 1e-5, x, gamma, &beta, y, mean, rstd);
  EXPECT_EQ(c.mismatches, 2) << c.summary();
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.non_finite, 1);
  EXPECT_EQ(c.first_mismatch, 4);
}

// The backward reference against central differences of a double forward whose statistics are
// the saved ones: L = sum(dy * y) for the LayerNorm (or RMSNorm) of x, differentiated by x_ij,
// gamma_j and beta_j. Outputs rounded to fp32 pass; one dgamma off by 1e-3 fails.
void check_backward_against_finite_differences(Norm norm) {
  constexpr std::int64_t kRows = 3, kFeatures = 5;
  const bool layer = norm == Norm::layer;
  const std::vector<double> x = random_values(kRows * kFeatures, -2.0, 2.0, 11);
  const std::vector<double> dy = random_values(kRows * kFeatures, -1.0, 1.0, 12);
  const std::vector<double> gamma = random_values(kFeatures, 0.5, 1.5, 13);
  const std::vector<double> beta = random_values(kFeatures, -0.5, 0.5, 14);
  const double eps = 1e-5;
  // L(x, gamma, beta) in double.
  const auto loss = [&](const std::vector<double>& xs, const std::vector<double>& g, const std::vector<double>& b) {
    double total = 0.0;
    for (std::int64_t r = 0; r < kRows; ++r) {
      double mean = 0.0, second = 0.0;
      for (std::int64_t j = 0; j < kFeatures; ++j) mean += xs[r * kFeatures + j] / kFeatures;
      for (std::int64_t j = 0; j < kFeatures; ++j) {
        const double v = layer ? xs[r * kFeatures + j] - mean : xs[r * kFeatures + j];
        second += v * v / kFeatures;
      }
      const double rstd = 1.0 / std::sqrt(second + eps);
      for (std::int64_t j = 0; j < kFeatures; ++j) {
        const double xhat = ((layer ? xs[r * kFeatures + j] - mean : xs[r * kFeatures + j])) * rstd;
        total += dy[r * kFeatures + j] * (xhat * g[j] + (layer ? b[j] : 0.0));
      }
    }
    return total;
  };
  const double h = 1e-6;
  const auto derivative = [&](std::vector<double>& v, std::size_t i, const std::function<double()>& f) {
    const double saved = v[i];
    v[i] = saved + h;
    const double up = f();
    v[i] = saved - h;
    const double down = f();
    v[i] = saved;
    return (up - down) / (2 * h);
  };
  std::vector<double> xs = x, gs = gamma, bs = beta;
  const std::function<double()> at = [&] { return loss(xs, gs, bs); };
  std::vector<double> dx, dgamma, dbeta;
  for (std::size_t i = 0; i < xs.size(); ++i) dx.push_back(derivative(xs, i, at));
  for (std::size_t j = 0; j < gs.size(); ++j) dgamma.push_back(derivative(gs, j, at));
  for (std::size_t j = 0; j < bs.size(); ++j) dbeta.push_back(derivative(bs, j, at));
  // The saved statistics: x's own, rounded to fp32 as the forward saves them.
  std::vector<float> mean, rstd;
  for (std::int64_t r = 0; r < kRows; ++r) {
    double m = 0.0, second = 0.0;
    for (std::int64_t j = 0; j < kFeatures; ++j) m += x[r * kFeatures + j] / kFeatures;
    for (std::int64_t j = 0; j < kFeatures; ++j) {
      const double v = layer ? x[r * kFeatures + j] - m : x[r * kFeatures + j];
      second += v * v / kFeatures;
    }
    mean.push_back(static_cast<float>(m));
    rstd.push_back(static_cast<float>(1.0 / std::sqrt(second + eps)));
  }
  // x rounded to fp32 moves the statistics less than their own fp32 rounding: use x as stored.
  const HostTensor hx(DType::f32, x), hdy(DType::f32, dy), hgamma(DType::f32, gamma);
  HostTensor hdx(DType::f32, dx), hdgamma(DType::f32, dgamma), hdbeta(DType::f32, dbeta);
  NormBackwardHost b;
  b.norm = norm;
  b.rows = kRows;
  b.features = kFeatures;
  b.x = hx.data();
  b.dy = hdy.data();
  b.gamma = hgamma.data();
  b.mean = layer ? mean.data() : nullptr;
  b.rstd = rstd.data();
  b.dx = hdx.data();
  b.dgamma = hdgamma.data();
  b.dbeta = layer ? hdbeta.data() : nullptr;
  const Comparison c = check_norm_backward(b);
  EXPECT_TRUE(c.passed()) << c.summary();
  hdgamma.set(1, hdgamma[1] + 1e-3);
  const Comparison bad = check_norm_backward(b);
  EXPECT_EQ(bad.mismatches, 1) << bad.summary();
  EXPECT_EQ(bad.first_mismatch, kRows * kFeatures + 1) << "dgamma is counted after dx";
}

TEST(NormsReference, LayerNormBackwardMatchesFiniteDifferences) {
  check_backward_against_finite_differences(Norm::layer);
}

TEST(NormsReference, RmsNormBackwardMatchesFiniteDifferences) { check_backward_against_finite_differences(Norm::rms); }

TEST(NormsReference, NoRowsMeansZeroColumnSums) {
  const HostTensor gamma(DType::f16, {1, 1, 1});
  HostTensor dgamma(DType::f16, {0, 0, 0}), dbeta(DType::f16, {0, 0, 0});
  NormBackwardHost b;
  b.dtype = DType::f16;
  b.rows = 0;
  b.features = 3;
  b.gamma = gamma.data();
  b.dgamma = dgamma.data();
  b.dbeta = dbeta.data();
  EXPECT_TRUE(check_norm_backward(b).passed());
  dbeta.set(2, 1e-3);
  EXPECT_EQ(check_norm_backward(b).mismatches, 1);
}

// ---- registry ----

const Op& op_named(const char* name) {
  const Op* op = builtin_registry().find_op(name);
  if (op == nullptr) throw std::runtime_error(std::string("no op ") + name);
  return *op;
}

TEST(NormsRegistry, OpsTakeRowsAndFeaturesInEveryDtype) {
  for (const char* name : {norms_ids::kLayerNorm, norms_ids::kLayerNormBackward, norms_ids::kRmsNorm,
                           norms_ids::kRmsNormBackward, norms_ids::kAddLayerNorm, norms_ids::kAddLayerNormBackward,
                           norms_ids::kAddRmsNorm, norms_ids::kAddRmsNormBackward}) {
    SCOPED_TRACE(name);
    const Op& op = op_named(name);
    EXPECT_EQ(op.dim_names, (std::vector<std::string>{"rows", "features"}));
    EXPECT_EQ(op.dtypes, (std::vector<DType>{DType::f32, DType::bf16, DType::f16}));
    // The last test problem is the large one in the last dtype, where the broken tutorial rung
    // must fail (BrokenVariants checks the last test problem).
    const Problem& last = op.test_problems.back();
    EXPECT_EQ(last.dim("rows"), 2048);
    EXPECT_EQ(last.dim("features"), 8192);
    EXPECT_EQ(last.dtype, DType::f16);
    std::int64_t widest = 0;
    for (const Problem& p : op.test_problems) {
      if (p.dims != last.dims) {
        EXPECT_LE(p.elements(), std::int64_t{1} << 22) << p.label();
      }
      widest = std::max(widest, p.dim("features"));
    }
    EXPECT_EQ(widest, 262144);
    const Problem headline = op.problem({16384, 8192}, DType::bf16);
    EXPECT_NE(std::find(op.bench_problems.begin(), op.bench_problems.end(), headline), op.bench_problems.end());
  }
}

TEST(NormsRegistry, WorkModelsCountEachTensorOnce) {
  const Problem p = op_named(norms_ids::kLayerNorm).problem({16384, 8192}, DType::bf16);
  const double m = 16384.0 * 8192.0;
  const Work forward = op_named(norms_ids::kLayerNorm).work(p);
  EXPECT_DOUBLE_EQ(forward.bytes_read, 2 * m + 2 * 2 * 8192);
  EXPECT_DOUBLE_EQ(forward.bytes_written, 2 * m + 2 * 4 * 16384);
  const Work backward = op_named(norms_ids::kLayerNormBackward).work(p);
  EXPECT_DOUBLE_EQ(backward.bytes_read, 2 * 2 * m + 2 * 8192 + 2 * 4 * 16384);
  EXPECT_DOUBLE_EQ(backward.bytes_written, 2 * m + 2 * 2 * 8192);
  const Work rms = op_named(norms_ids::kRmsNormBackward).work(p);
  EXPECT_DOUBLE_EQ(rms.bytes_read, 2 * 2 * m + 2 * 8192 + 4 * 16384);
  EXPECT_DOUBLE_EQ(rms.bytes_written, 2 * m + 2 * 8192);
  // The add_ forms: the residual read beside x and the sum written beside y; the backward reads
  // dresidual too.
  const Work add = op_named(norms_ids::kAddRmsNorm).work(p);
  EXPECT_DOUBLE_EQ(add.bytes_read, 2 * 2 * m + 2 * 8192);
  EXPECT_DOUBLE_EQ(add.bytes_written, 2 * 2 * m + 4 * 16384);
  const Work add_backward = op_named(norms_ids::kAddLayerNormBackward).work(p);
  EXPECT_DOUBLE_EQ(add_backward.bytes_read, 3 * 2 * m + 2 * 8192 + 2 * 4 * 16384);
  EXPECT_DOUBLE_EQ(add_backward.bytes_written, 2 * m + 2 * 2 * 8192);
}

TEST(NormsRegistry, RungsSayWhyTheyCannotRunAShape) {
  DeviceInfo hopper, ampere;
  hopper.compute_major = 9;
  ampere.compute_major = 8;
  const Op& forward = op_named(norms_ids::kLayerNorm);
  const auto why = [&](const Op& op, const char* variant, std::int64_t rows, std::int64_t features, DType dtype,
                       const DeviceInfo& device) {
    return why_not(*op.find_variant(variant), device, op.problem({rows, features}, dtype));
  };
  for (const Variant& v : forward.variants) EXPECT_EQ(why_not(v, hopper, forward.problem({300, 1000}, DType::f32)), "");
  EXPECT_EQ(why(forward, norms_ids::kCluster, 4, 65536, DType::f32, ampere),
            "needs thread-block clusters (compute capability 9.0+)");
  EXPECT_EQ(why(forward, norms_ids::kCluster, 4, 262144, DType::bf16, hopper), "");
  EXPECT_NE(why(forward, norms_ids::kCluster, 4, 262145, DType::bf16, hopper), "");
  EXPECT_NE(why(forward, norms_ids::kCluster, 4, 131073, DType::f32, hopper), "") << "element loads stop at 8 x 16384";
  EXPECT_EQ(why(forward, norms_ids::kVectorRegisters, 4, 32768, DType::f32, ampere), "");
  EXPECT_NE(why(forward, norms_ids::kVectorRegisters, 4, 32769, DType::f32, ampere), "");
  EXPECT_NE(why(forward, norms_ids::kVectorRegisters, 4, 16388, DType::bf16, ampere), "")
      << "16388 bf16 features: rows not on 16-byte boundaries, element loads";
  EXPECT_EQ(why(forward, norms_ids::kWarpPerRow, 4, 0, DType::f32, ampere),
            "a row needs at least one feature (an empty row has no mean)");
  EXPECT_EQ(why(forward, norms_ids::kTutorialFixed, 0, 1000, DType::f32, ampere), "");
  const Op& backward = op_named(norms_ids::kRmsNormBackward);
  EXPECT_EQ(why(backward, norms_ids::kFused, 4, 16384, DType::f16, ampere), "");
  EXPECT_NE(why(backward, norms_ids::kFused, 4, 16385, DType::f16, ampere), "");
  EXPECT_EQ(why(backward, norms_ids::kUnfused, 4, 262144, DType::f16, ampere), "");
}

// The staged backward's rows, which the library's backward takes wherever they are given: whole
// 16-byte vectors, at most 1024 of them (two a thread, 512 threads a row), aligned tensors.
TEST(NormsRegistry, StagedBackwardTakesAlignedRowsOfUpTo1024Vectors) {
  namespace nv = norms_variants;
  for (const std::int64_t features : {8, 768, 1000, 1024, 2048, 4096, 5120, 8192})
    EXPECT_EQ(nv::backward_staged_limits(features, 2, true), "") << features << " 16-bit features";
  EXPECT_EQ(nv::backward_staged_limits(4096, 4, true), "");
  EXPECT_NE(nv::backward_staged_limits(8200, 2, true), "") << "1025 vectors";
  EXPECT_NE(nv::backward_staged_limits(16384, 2, true), "");
  EXPECT_NE(nv::backward_staged_limits(8192, 4, true), "") << "8192 f32 features: 2048 vectors";
  EXPECT_NE(nv::backward_staged_limits(1001, 2, true), "") << "rows not of whole vectors";
  EXPECT_NE(nv::backward_staged_limits(1024, 2, false), "") << "a tensor off a 16-byte boundary";
}

// The backward's scratch: one fp32 row of partials per chunk of rows and output, the chunks
// capped at 2048 and at 2^22 floats an output.
TEST(NormsRegistry, BackwardWorkspaceHoldsTheColumnPartials) {
  const Op& layer = op_named(norms_ids::kLayerNormBackward);
  const Op& rms = op_named(norms_ids::kRmsNormBackward);
  const auto bytes = [](const Op& op, std::int64_t rows, std::int64_t features) {
    return op.find_variant(norms_ids::kFused)->workspace_bytes(op.problem({rows, features}, DType::bf16));
  };
  EXPECT_EQ(bytes(layer, 300, 1000), 2u * 300 * 1000 * 4);
  EXPECT_EQ(bytes(rms, 300, 1000), 1u * 300 * 1000 * 4);
  EXPECT_EQ(bytes(layer, 16384, 8192), 2u * 512 * 8192 * 4);
  EXPECT_EQ(bytes(layer, 262144, 1024), 2u * 2048 * 1024 * 4);
  EXPECT_EQ(bytes(layer, 0, 1000), 0u);
  EXPECT_EQ(layer_norm_backward_workspace_bytes(16384, 8192), 2u * 512 * 8192 * 4);
  EXPECT_EQ(rms_norm_backward_workspace_bytes(7, 3), 7u * 3 * 4);
}

// ---- library argument checks ----

TEST(NormsLibrary, ValidatesBeforeTouchingTheGpu) {
  using test_support::thrown_kind;
  auto* f32 = reinterpret_cast<float*>(std::uintptr_t{0x10000});
  auto* f16 = reinterpret_cast<__half*>(std::uintptr_t{0x20000});
  auto* bf16 = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x30000});
  auto* stats = reinterpret_cast<float*>(std::uintptr_t{0x40000});
  const auto kInvalid = ErrorKind::invalid_argument;
  EXPECT_EQ(thrown_kind([&] { layer_norm(f32, f32, f32, f32, stats, stats, -1, 8); }), kInvalid);
  EXPECT_EQ(thrown_kind([&] { layer_norm(f32, f32, f32, f32, stats, stats, 4, 8, 0.0f); }), kInvalid);
  EXPECT_EQ(thrown_kind([&] { rms_norm(f16, f16, f16, stats, 4, 8, NAN); }), kInvalid);
  EXPECT_EQ(thrown_kind([&] { rms_norm(f16, f16, f16, stats, 4, 0); }), kInvalid) << "a row of no features";
  EXPECT_EQ(thrown_kind(
                [&] { layer_norm(bf16, bf16, static_cast<const __nv_bfloat16*>(nullptr), bf16, stats, stats, 4, 8); }),
            kInvalid)
      << "LayerNorm needs beta";
  EXPECT_EQ(
      thrown_kind([&] { rms_norm(reinterpret_cast<const __half*>(std::uintptr_t{0x20001}), f16, f16, stats, 4, 8); }),
      kInvalid)
      << "x not aligned to its element";
  EXPECT_NO_THROW(layer_norm<float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 8));
  // rows * features past 64 bits (features within a row's limit).
  constexpr std::int64_t kManyRows = std::int64_t{1} << 40, kWide = std::int64_t{1} << 30;
  EXPECT_EQ(thrown_kind([&] { rms_norm(f16, f16, f16, stats, kManyRows, kWide); }), kInvalid);
  EXPECT_EQ(thrown_kind([&] { layer_norm_backward(f32, f32, f32, stats, stats, f32, f32, f32, kManyRows, kWide); }),
            kInvalid);
  // Backward: a null output, too small a workspace, negative sizes.
  EXPECT_EQ(thrown_kind([&] {
              layer_norm_backward(f32, f32, f32, stats, stats, f32, f32, static_cast<float*>(nullptr), 4, 8);
            }),
            kInvalid);
  EXPECT_EQ(thrown_kind([&] { rms_norm_backward(f16, f16, f16, stats, f16, f16, 4, 8, f32, 1); }), kInvalid)
      << "a workspace of one byte";
  EXPECT_EQ(
      thrown_kind([&] { rms_norm_backward(f16, f16, f16, stats, f16, f16, 4, 8, static_cast<void*>(nullptr), 1024); }),
      kInvalid);
  EXPECT_EQ(thrown_kind([&] { layer_norm_backward_workspace_bytes(-1, 8); }), kInvalid);
  // The add_ forms: residual, its sum and dresidual are needed; the plain checks apply too.
  EXPECT_EQ(thrown_kind(
                [&] { add_rms_norm(bf16, static_cast<const __nv_bfloat16*>(nullptr), bf16, bf16, bf16, stats, 4, 8); }),
            kInvalid);
  EXPECT_EQ(
      thrown_kind([&] { add_layer_norm(f32, f32, f32, f32, f32, static_cast<float*>(nullptr), stats, stats, 4, 8); }),
      kInvalid);
  EXPECT_EQ(thrown_kind([&] { add_layer_norm(f32, f32, f32, f32, f32, f32, stats, stats, 4, 8, -1.0f); }), kInvalid);
  EXPECT_EQ(thrown_kind([&] { add_rms_norm(f16, f16, f16, f16, f16, stats, kManyRows, kWide); }), kInvalid);
  EXPECT_EQ(thrown_kind([&] {
              add_rms_norm_backward(f16, f16, static_cast<const __half*>(nullptr), f16, stats, f16, f16, 4, 8, f32,
                                    1024);
            }),
            kInvalid)
      << "dresidual";
  EXPECT_NO_THROW(add_rms_norm<float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 8));
  // No rows: dgamma and dbeta are zeros and need no workspace, so a null one is no error.
  ASSERT_EQ(layer_norm_backward_workspace_bytes(0, 8), 0u);
  test_support::expect_arguments_accepted([&] {
    layer_norm_backward<float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, f32, f32 + 8, 0, 8,
                               static_cast<void*>(nullptr), 0);
  });
}

}  // namespace
}  // namespace cudalab::harness
