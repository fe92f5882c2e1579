// The bias + activation ops without a GPU: the double-precision activations and derivatives, the
// tutorial's GELU constants, the checks (passing fp32-rounded results and the unfused baseline's
// double rounding, failing a wrong column, an off value, an unwritten element, a dropped row of
// dbias, an overflow far from the threshold, a tensor past its relative L2 limit), the registry
// entries, claim C32's verdicts on synthetic records, and the library calls' argument checks (all
// raised before any CUDA call).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "claims_test_support.hpp"
#include "typed_array.hpp"

#include "cudalab/activations.hpp"
#include "cudalab/dtype.hpp"
#include "error_kind.hpp"
#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/bias_act/ids.hpp"
#include "ops/bias_act/reference.hpp"

namespace cudalab::harness {
namespace {

namespace ids = bias_act_ids;

constexpr Activation kActivations[] = {Activation::relu, Activation::gelu_tanh, Activation::gelu_erf, Activation::silu};
constexpr DType kDtypes[] = {DType::f32, DType::bf16, DType::f16};

using Array = cudalab::test_support::TypedArray;

// Uniform values in [-2, 2) of `dtype`, from a seeded stream.
Array random_array(DType dtype, std::int64_t n, std::uint64_t seed) {
  Array a(dtype, n);
  for (std::int64_t i = 0; i < n; ++i) a.set(i, 2.0 * random_value(seed, i, n, Distribution::uniform));
  return a;
}

// What a fused kernel writes: act of the fp32 sum, correctly rounded to fp32, then to the type;
// with `unfused`, the sum is first rounded to the type, as the unfused baseline stores it.
Array forward_output(DType dtype, Activation activation, const Array& x, const Array& bias, std::int64_t rows,
                     std::int64_t features, bool unfused = false) {
  Array y(dtype, rows * features);
  for (std::int64_t i = 0; i < rows * features; ++i) {
    double v = static_cast<float>(x.get(i) + bias.get(i % features));
    if (unfused) {
      Array rounded(dtype, 1);
      rounded.set(0, v);
      v = rounded.get(0);
    }
    y.set(i, static_cast<float>(activation_reference(activation, v)));
  }
  return y;
}

// What the fused backward writes: dx rounded from fp32, and dbias from fp32 sums of 128-row tiles.
struct Gradients {
  Array dx, dbias;
};

Gradients backward_outputs(DType dtype, Activation activation, const Array& x, const Array& bias, const Array& dy,
                           std::int64_t rows, std::int64_t features) {
  Gradients g{Array(dtype, rows * features), Array(dtype, features)};
  for (std::int64_t j = 0; j < features; ++j) {
    float total = 0;
    for (std::int64_t first = 0; first < rows; first += 128) {
      float tile = 0;
      for (std::int64_t r = first; r < rows && r < first + 128; ++r) {
        const std::int64_t i = r * features + j;
        const float v = static_cast<float>(x.get(i) + bias.get(j));
        const float d =
            static_cast<float>(dy.get(i)) * static_cast<float>(activation_derivative_reference(activation, v));
        g.dx.set(i, d);
        tile += d;
      }
      total += tile;
    }
    g.dbias.set(j, total);
  }
  return g;
}

TEST(BiasActReference, ActivationsAtKnownPoints) {
  EXPECT_EQ(activation_reference(Activation::relu, -2.5), 0.0);
  EXPECT_EQ(activation_reference(Activation::relu, 2.5), 2.5);
  // x Phi(x) at 1 and -1, and the tanh approximation's values there.
  EXPECT_NEAR(activation_reference(Activation::gelu_erf, 1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(activation_reference(Activation::gelu_erf, -1.0), -0.15865525393145707, 1e-15);
  EXPECT_NEAR(activation_reference(Activation::gelu_tanh, 1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(activation_reference(Activation::gelu_tanh, -1.0), -0.15880800939172324, 1e-15);
  // x / (1 + e^-x) at 1 and -1.
  EXPECT_NEAR(activation_reference(Activation::silu, 1.0), 0.7310585786300049, 1e-15);
  EXPECT_NEAR(activation_reference(Activation::silu, -1.0), -0.2689414213699951, 1e-15);
  // Far out, GELU and SiLU are the identity or zero, never NaN.
  for (Activation a : {Activation::gelu_tanh, Activation::gelu_erf, Activation::silu}) {
    EXPECT_EQ(activation_reference(a, 1e32), 1e32);
    EXPECT_EQ(activation_reference(a, -1e32), 0.0);
    EXPECT_EQ(activation_derivative_reference(a, 1e32), 1.0);
    EXPECT_EQ(activation_derivative_reference(a, -1e32), 0.0);
  }
  // ReLU's derivative at 0 is 0, as PyTorch takes it.
  EXPECT_EQ(activation_derivative_reference(Activation::relu, 0.0), 0.0);
}

TEST(BiasActReference, DerivativesMatchCentralDifferences) {
  for (Activation a : {Activation::gelu_tanh, Activation::gelu_erf, Activation::silu}) {
    for (double v = -6; v <= 6; v += 0.37) {
      const double h = 1e-5;
      const double difference = (activation_reference(a, v + h) - activation_reference(a, v - h)) / (2 * h);
      EXPECT_NEAR(activation_derivative_reference(a, v), difference, 1e-9) << static_cast<int>(a) << " at " << v;
    }
  }
}

// The tutorial's gelu_approx writes sqrt(2/pi) as 0.7978845608f and the cubic coefficient as
// 0.044715f: the same floats the standard formula gives, so its GELU is the tanh approximation the
// reference computes (the GPU suite checks its outputs against that reference).
TEST(BiasActReference, TutorialGeluConstantsAreTheStandardOnes) {
  EXPECT_EQ(0.7978845608f, static_cast<float>(std::sqrt(2.0 / 3.14159265358979323846)));
  EXPECT_EQ(0.044715f, static_cast<float>(0.044715));
}

TEST(BiasActCheck, PassesFusedAndUnfusedRoundingInEveryDtype) {
  const std::int64_t rows = 37, features = 61;
  for (DType dtype : kDtypes) {
    const Array x = random_array(dtype, rows * features, 1), bias = random_array(dtype, features, 2);
    for (Activation a : kActivations) {
      for (bool unfused : {false, true}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " activation " + std::to_string(static_cast<int>(a)) +
                     (unfused ? " unfused" : " fused"));
        const Array y = forward_output(dtype, a, x, bias, rows, features, unfused);
        const Comparison c = check_bias_act(dtype, a, x.data(), bias.data(), y.data(), rows, features);
        EXPECT_TRUE(c.passed()) << c.summary();
      }
    }
  }
}

TEST(BiasActCheck, FailsAWrongColumnAnOffValueAndAnUnwrittenElement) {
  const std::int64_t rows = 4, features = 33;
  for (DType dtype : kDtypes) {
    SCOPED_TRACE(to_string(dtype));
    const Array x = random_array(dtype, rows * features, 3), bias = random_array(dtype, features, 4);
    // The bias of the next column: every element that reads it is wrong.
    Array shifted(dtype, features);
    for (std::int64_t j = 0; j < features; ++j) shifted.set(j, bias.get((j + 1) % features));
    const Array wrong = forward_output(dtype, Activation::gelu_tanh, x, shifted, rows, features);
    EXPECT_GT(
        check_bias_act(dtype, Activation::gelu_tanh, x.data(), bias.data(), wrong.data(), rows, features).mismatches,
        rows * features / 2);
    Array y = forward_output(dtype, Activation::gelu_erf, x, bias, rows, features);
    y.set(5, y.get(5) * 1.05 + 0.01);
    y.poison(9);
    const Comparison c = check_bias_act(dtype, Activation::gelu_erf, x.data(), bias.data(), y.data(), rows, features);
    EXPECT_EQ(c.mismatches, 2) << c.summary();
    EXPECT_EQ(c.unwritten, 1);
    EXPECT_EQ(c.first_mismatch, 5);
  }
}

// fp16 overflows at 65520: an infinity passes where the exact value is past it (or within its
// bound of it), fails where the value is far below, and 65504 fails for a value twice as large.
TEST(BiasActCheck, Fp16InfinityPassesOnlyNearOrPastTheOverflowThreshold) {
  Array x(DType::f16, 3), bias(DType::f16, 1), y(DType::f16, 3);
  bias.set(0, 60000);
  x.set(0, 10000);  // 70000: rounds to infinity
  x.set(1, -1000);  // 59000: finite
  x.set(2, 60000);  // 120000
  y.set(0, INFINITY);
  y.set(1, INFINITY);
  y.set(2, 65504);
  const Comparison c = check_bias_act(DType::f16, Activation::relu, x.data(), bias.data(), y.data(), 3, 1);
  EXPECT_EQ(c.mismatches, 2) << c.summary();
  EXPECT_EQ(c.first_mismatch, 1);
}

// bf16 ReLU outputs one ulp above the rounded value at y in [1, 1.25): each within the elementwise
// bound (the unfused rounding of x + bias may cost that), but the tensor's relative L2 error,
// ~6e-3, is past bf16's 4e-3. The limit applies from 1024 elements.
TEST(BiasActCheck, RelativeL2LimitFailsATensorEveryElementOfWhichPasses) {
  for (std::int64_t n : {1023, 1024}) {
    Array x(DType::bf16, n), bias(DType::bf16, 1), y(DType::bf16, n);
    bias.set(0, 0);
    for (std::int64_t i = 0; i < n; ++i) {
      x.set(i, 1.0 + (i % 32) / 128.0);
      y.set(i, x.get(i) + 1.0 / 128);
    }
    const Comparison c = check_bias_act(DType::bf16, Activation::relu, x.data(), bias.data(), y.data(), n, 1);
    EXPECT_GT(c.rel_l2_error, 4e-3);
    EXPECT_EQ(c.mismatches, n == 1024 ? 1 : 0) << c.summary();
    if (n == 1024) {
      EXPECT_EQ(c.first_mismatch, -1);
    }
  }
}

// The row of column j whose dx is largest in magnitude: dropping it from dbias[j] must be seen.
std::int64_t largest_row(const Array& dx, std::int64_t rows, std::int64_t features, std::int64_t j) {
  std::int64_t best = 0;
  for (std::int64_t r = 1; r < rows; ++r)
    if (std::fabs(dx.get(r * features + j)) > std::fabs(dx.get(best * features + j))) best = r;
  return best;
}

TEST(BiasActBackwardCheck, PassesTheFusedOrderAndFailsADroppedRow) {
  for (DType dtype : kDtypes) {
    for (Activation a : kActivations) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " activation " + std::to_string(static_cast<int>(a)));
      const std::int64_t rows = 300, features = 7;
      const Array x = random_array(dtype, rows * features, 5), bias = random_array(dtype, features, 6);
      const Array dy = random_array(dtype, rows * features, 7);
      Gradients g = backward_outputs(dtype, a, x, bias, dy, rows, features);
      const auto check = [&] {
        return check_bias_act_backward(dtype, a, x.data(), bias.data(), dy.data(), g.dx.data(), g.dbias.data(), rows,
                                       features);
      };
      Comparison c = check();
      EXPECT_TRUE(c.passed()) << c.summary();
      // dbias[3] without one row's term: reported after the rows * features elements of dx.
      const std::int64_t r = largest_row(g.dx, rows, features, 3);
      g.dbias.set(3, g.dbias.get(3) - g.dx.get(r * features + 3));
      c = check();
      EXPECT_EQ(c.mismatches, 1) << c.summary();
      EXPECT_EQ(c.first_mismatch, rows * features + 3);
    }
  }
}

// The unfused baseline sums the dx it wrote, each rounded to bf16: at 4096 rows those roundings add
// up past the exact sum's bound in some columns, but the sum of the written values is within an
// fp32 sum's bound of what it gives. Dropping a row fails both.
TEST(BiasActBackwardCheck, Bf16DbiasMaySumTheWrittenDx) {
  const std::int64_t rows = 4096, features = 64;
  const Array x = random_array(DType::bf16, rows * features, 12), bias = random_array(DType::bf16, features, 13);
  const Array dy = random_array(DType::bf16, rows * features, 14);
  Gradients g = backward_outputs(DType::bf16, Activation::gelu_erf, x, bias, dy, rows, features);
  for (std::int64_t j = 0; j < features; ++j) {
    float sum = 0;
    for (std::int64_t r = 0; r < rows; ++r) sum += static_cast<float>(g.dx.get(r * features + j));
    g.dbias.set(j, sum);
  }
  const auto check = [&] {
    return check_bias_act_backward(DType::bf16, Activation::gelu_erf, x.data(), bias.data(), dy.data(), g.dx.data(),
                                   g.dbias.data(), rows, features);
  };
  Comparison c = check();
  EXPECT_TRUE(c.passed()) << c.summary();
  g.dbias.set(5, g.dbias.get(5) - g.dx.get(largest_row(g.dx, rows, features, 5) * features + 5));
  c = check();
  EXPECT_EQ(c.mismatches, 1) << c.summary();
}

// 4096 rows of fp32: one row's share of a column sum is far above the fp32 sum's bound.
TEST(BiasActBackwardCheck, Fp32DbiasBoundIsTightEnoughToSeeOneRowOf4096) {
  const std::int64_t rows = 4096, features = 3;
  const Array x = random_array(DType::f32, rows * features, 8), bias = random_array(DType::f32, features, 9);
  const Array dy = random_array(DType::f32, rows * features, 10);
  Gradients g = backward_outputs(DType::f32, Activation::gelu_tanh, x, bias, dy, rows, features);
  const auto check = [&] {
    return check_bias_act_backward(DType::f32, Activation::gelu_tanh, x.data(), bias.data(), dy.data(), g.dx.data(),
                                   g.dbias.data(), rows, features);
  };
  EXPECT_TRUE(check().passed());
  g.dbias.set(1, g.dbias.get(1) - g.dx.get(largest_row(g.dx, rows, features, 1) * features + 1));
  EXPECT_EQ(check().mismatches, 1);
}

// No rows: dbias is the empty sum, exactly 0.
TEST(BiasActBackwardCheck, NoRowsMeansZeroDbias) {
  Array dbias(DType::bf16, 5);
  for (std::int64_t j = 0; j < 5; ++j) dbias.set(j, 0);
  const Array bias = random_array(DType::bf16, 5, 11);
  EXPECT_TRUE(
      check_bias_act_backward(DType::bf16, Activation::relu, nullptr, bias.data(), nullptr, nullptr, dbias.data(), 0, 5)
          .passed());
  dbias.set(2, 1e-3);
  EXPECT_FALSE(
      check_bias_act_backward(DType::bf16, Activation::relu, nullptr, bias.data(), nullptr, nullptr, dbias.data(), 0, 5)
          .passed());
}

const Op& op_named(const char* name) {
  const Op* op = builtin_registry().find_op(name);
  if (op == nullptr) throw std::logic_error(std::string("no op ") + name);
  return *op;
}

TEST(BiasActRegistry, OpsDimensionsDtypesAndTraffic) {
  for (const char* name : {ids::kOp, ids::kBackwardOp}) {
    const Op& op = op_named(name);
    EXPECT_EQ(op.dim_names, (std::vector<std::string>{"rows", "features"}));
    EXPECT_EQ(op.dtypes, (std::vector<DType>{DType::f32, DType::bf16, DType::f16}));
    ASSERT_EQ(op.params.size(), 1u);
    EXPECT_EQ(op.params[0].name, ids::kActivation);
    EXPECT_EQ(op.params[0].value, 1);
  }
  const Problem p = op_named(ids::kOp).problem({16384, 8192}, DType::bf16);
  const Work forward = op_named(ids::kOp).work(p);
  EXPECT_EQ(forward.bytes_read, 2.0 * (16384.0 * 8192 + 8192));
  EXPECT_EQ(forward.bytes_written, 2.0 * 16384 * 8192);
  const Problem q = op_named(ids::kBackwardOp).problem({16384, 8192}, DType::f32);
  const Work backward = op_named(ids::kBackwardOp).work(q);
  EXPECT_EQ(backward.bytes_read, 4.0 * (2 * 16384.0 * 8192 + 8192));
  EXPECT_EQ(backward.bytes_written, 4.0 * (16384.0 * 8192 + 8192));
}

// Every variant runs every test problem, except the tutorial's erf GELU, which it never wrote; an
// activation outside 0-2 is refused by all.
TEST(BiasActRegistry, VariantsRunEveryTestProblemOrSayWhyNot) {
  for (const char* name : {ids::kOp, ids::kBackwardOp}) {
    const Op& op = op_named(name);
    for (const Variant& v : op.variants) {
      for (const Problem& p : op.test_problems) {
        const std::string why = why_not(v, DeviceInfo{}, p);
        if (v.id == ids::kTutorial && p.param(ids::kActivation) >= 2) {
          EXPECT_NE(why, "") << p.label();
        } else {
          EXPECT_EQ(why, "") << v.id << " " << p.label();
        }
      }
      EXPECT_NE(why_not(v, DeviceInfo{}, op.problem({4, 4}, DType::f32, {{ids::kActivation, 4}})), "") << v.id;
    }
  }
  EXPECT_EQ(op_named(ids::kOp).variants.front().id, ids::kTutorial);
  EXPECT_EQ(op_named(ids::kBackwardOp).variants.front().id, ids::kNaive);
  for (const char* name : {ids::kOp, ids::kBackwardOp})
    EXPECT_EQ(op_named(name).find_variant(ids::kUnfused)->role, Role::baseline) << name;
}

TEST(BiasActRegistry, WorkspacesAndProblemSizes) {
  const Op& forward = op_named(ids::kOp);
  const Op& backward = op_named(ids::kBackwardOp);
  const Problem p = forward.problem({300, 4097}, DType::f16);
  EXPECT_EQ(forward.find_variant(ids::kUnfused)->workspace_bytes(p), 2u * 300 * 4097);
  EXPECT_TRUE(forward.find_variant(ids::kTiled)->workspace_bytes == nullptr);
  // One fp32 partial per column per 128 rows.
  for (const char* id : {ids::kFused, ids::kUnfused})
    EXPECT_EQ(backward.find_variant(id)->workspace_bytes(backward.problem({300, 4097}, DType::f16)), 3u * 4097 * 4);
  EXPECT_TRUE(backward.find_variant(ids::kNaive)->workspace_bytes == nullptr);
  for (const Op* op : {&forward, &backward}) {
    std::int64_t large = 0;
    for (const Problem& t : op->test_problems)
      if (t.elements() > (std::int64_t{1} << 22)) ++large;
    EXPECT_EQ(large, 3) << op->name;  // the one large shape, in each dtype
    for (DType dtype : kDtypes)
      for (double a : {0.0, 1.0, 2.0})
        EXPECT_NE(std::find(op->bench_problems.begin(), op->bench_problems.end(),
                            op->problem({16384, 8192}, dtype, {{ids::kActivation, a}})),
                  op->bench_problems.end());
  }
}

// C32 from synthetic records: fused twice as fast as unfused in every part holds; a 2% gain does
// not hold (the claim is taken as 1.05x). Parts: ReLU, GELU tanh, GELU erf, each bf16 then fp32,
// and the same against eager PyTorch where the PyTorch benchmark's records (eager_ms > 0) are there.
nlohmann::json c32_results(double fused_ms, double unfused_ms, double eager_ms = 0) {
  const Op& op = op_named(ids::kOp);
  nlohmann::json records = nlohmann::json::array();
  for (double a : {0.0, 1.0, 2.0}) {
    for (DType dtype : {DType::bf16, DType::f32}) {
      const Problem p = op.problem({16384, 8192}, dtype, {{ids::kActivation, a}});
      auto record = [&](const char* variant, const char* role, double ms, const char* op = ids::kOp,
                        const char* distribution = "uniform") {
        return nlohmann::json{{"op", op},
                              {"variant", variant},
                              {"role", role},
                              {"distribution", distribution},
                              {"problem", {{"key", p.key()}}},
                              {"time_ms", {{"median", ms}}},
                              {"roofline", {{"gbps", 1000.0 / ms}}}};
      };
      if (unfused_ms > 0) {
        records.push_back(record(ids::kUnfused, "baseline", unfused_ms));
        records.push_back(record(ids::kTiled, "ladder", fused_ms));
        records.push_back(record(ids::kTutorial, "ladder", 3 * fused_ms));
      }
      if (eager_ms > 0) {
        records.push_back(record("eager", "baseline", eager_ms, "pytorch.bias_act", "normal"));
        records.push_back(record("cudalab", "ladder", fused_ms, "pytorch.bias_act", "normal"));
      }
    }
  }
  return {{"records", records}};
}

TEST(BiasActClaims, C32JudgesEachActivationAndDtype) {
  using test_support::kHolds;
  using test_support::kNot;
  const ClaimCheck& c32 = test_support::claim_check("C32");
  EXPECT_EQ(c32.page, ids::kOp);
  const nlohmann::json holds = c32.evaluate(c32_results(0.5, 1.0));
  EXPECT_EQ(test_support::outcomes(holds), test_support::Outcomes(6, kHolds));
  EXPECT_DOUBLE_EQ(holds["ratio"].get<double>(), 2.0);
  const nlohmann::json barely = c32.evaluate(c32_results(1.0, 1.02));
  EXPECT_EQ(test_support::outcomes(barely), test_support::Outcomes(6, kNot));
  EXPECT_TRUE(c32.evaluate(nlohmann::json{{"records", nlohmann::json::array()}}).is_null());
  // The PyTorch benchmark's file alone: six parts against eager; beside the C++ records, twelve.
  const nlohmann::json eager_only = c32.evaluate(c32_results(0.5, 0, 1.0));
  EXPECT_EQ(test_support::outcomes(eager_only), test_support::Outcomes(6, kHolds));
  EXPECT_NE(eager_only["parts"][0]["part"].get<std::string>().find("eager PyTorch"), std::string::npos);
  const nlohmann::json both = c32.evaluate(c32_results(0.5, 1.0, 0.51));
  test_support::Outcomes expected;
  for (int i = 0; i < 6; ++i) expected.insert(expected.end(), {kHolds, kNot});
  EXPECT_EQ(test_support::outcomes(both), expected);
}

TEST(BiasActLibrary, ValidatesBeforeTouchingTheGpu) {
  using test_support::thrown_kind;
  auto* f = reinterpret_cast<float*>(std::uintptr_t{0x10000});
  auto* b = reinterpret_cast<float*>(std::uintptr_t{0x20000});
  auto* y = reinterpret_cast<float*>(std::uintptr_t{0x30000});
  auto* g = reinterpret_cast<float*>(std::uintptr_t{0x40000});
  auto* db = reinterpret_cast<float*>(std::uintptr_t{0x50000});
  const auto relu = Activation::relu;
  EXPECT_EQ(thrown_kind([&] { bias_act(f, b, y, -1, 4, relu); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_act(f, b, y, 4, 4, static_cast<Activation>(4)); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_act<float>(nullptr, b, y, 4, 4, relu); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_act(f, b, reinterpret_cast<float*>(std::uintptr_t{0x30002}), 4, 4, relu); }),
            ErrorKind::invalid_argument);
  // y overlapping x (16 floats from 0x10000 reach 0x10040) or the bias.
  EXPECT_EQ(thrown_kind([&] { bias_act(f, b, reinterpret_cast<float*>(std::uintptr_t{0x10020}), 4, 4, relu); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_act(f, b, b, 4, 4, relu); }), ErrorKind::invalid_argument);
  const __half* no_half = nullptr;
  EXPECT_NO_THROW(bias_act(no_half, no_half, static_cast<__half*>(nullptr), 0, 4, relu));
  // rows * features = 2^64 wraps to 0 in 64 bits: refused, not run as an empty problem.
  constexpr std::int64_t kHuge = std::int64_t{1} << 32;
  EXPECT_EQ(thrown_kind([&] { bias_act(f, b, y, kHuge, kHuge, relu); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_act_backward(f, b, g, y, db, kHuge, kHuge, relu); }), ErrorKind::invalid_argument);
  // Backward: dbias overlapping dx, a null dbias, a workspace smaller than the call needs.
  EXPECT_EQ(thrown_kind([&] { bias_act_backward(f, b, g, y, y + 15, 4, 4, relu); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_act_backward(f, b, g, y, static_cast<float*>(nullptr), 4, 4, relu); }),
            ErrorKind::invalid_argument);
  const std::size_t needed = bias_act_backward_workspace_bytes(300, 4);
  EXPECT_EQ(needed, 3u * 4 * 4);
  EXPECT_EQ(thrown_kind([&] { bias_act_backward(f, b, g, y, db, 300, 4, relu, y, needed - 4); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_act_backward(f, b, g, y, db, 300, 4, relu, nullptr, needed); }),
            ErrorKind::invalid_argument);
  EXPECT_NO_THROW(bias_act_backward(f, b, g, y, db, 3, 0, relu));
  // No rows: dbias is zeros and needs no workspace, so a null one is no error.
  ASSERT_EQ(bias_act_backward_workspace_bytes(0, 4), 0u);
  test_support::expect_arguments_accepted(
      [&] { bias_act_backward<float>(nullptr, b, nullptr, nullptr, db, 0, 4, relu, nullptr, 0); });
  // bias_gradient: sizes, a null or overlapping dbias, the workspace.
  EXPECT_EQ(thrown_kind([&] { bias_gradient(g, db, -1, 4, y, needed); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_gradient(g, db, kHuge, kHuge, y, needed); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_gradient(g, static_cast<float*>(nullptr), 300, 4, y, needed); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { bias_gradient(g, g + 4, 300, 4, y, needed); }), ErrorKind::invalid_argument)
      << "dbias inside dy";
  EXPECT_EQ(thrown_kind([&] { bias_gradient(g, db, 300, 4, y, needed - 4); }), ErrorKind::invalid_argument);
  test_support::expect_arguments_accepted([&] { bias_gradient<float>(nullptr, db, 0, 4, nullptr, 0); });
}

}  // namespace
}  // namespace cudalab::harness
