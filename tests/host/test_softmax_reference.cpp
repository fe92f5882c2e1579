// The softmax ops without a GPU: the test inputs' row kinds, the checks against softmaxes computed
// on the host the way the kernels do (fp32, max subtracted, exp2f of a pre-scaled argument) and
// against wrong ones (no max subtracted, a perturbed element, an unwritten one, an error inside
// every element's bound but past the relative L2 limit, a backward without its dot product), the
// ops' registration (cuDNN's softmax the baseline of each), and the library calls' argument checks
// (raised before any CUDA call).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "error_kind.hpp"
#include "typed_array.hpp"

#include "cudalab/dtype.hpp"
#include "cudalab/softmax.hpp"
#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/softmax/ids.hpp"
#include "ops/softmax/inputs.hpp"
#include "ops/softmax/reference.hpp"
#include "ops/softmax/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = softmax_ids;

constexpr std::uint64_t kSeed = 0x50F7;

using Array = cudalab::test_support::TypedArray;

// x as the forward's fill makes it: the distribution's values rounded to the dtype, then the row
// kinds, rounded again. (fill_random draws fp16's large magnitudes from its own range; the tests
// here leave that pair out rather than repeat the rule.)
Array test_logits(DType dtype, std::int64_t rows, std::int64_t features, Distribution distribution) {
  Array x(dtype, rows * features);
  for (std::int64_t i = 0; i < rows * features; ++i) {
    x.set(i, random_value(kSeed, i, rows * features, distribution));
    x.set(i,
          softmax_test_logit(static_cast<float>(x.get(i)), i / features, i % features, features, kSeed, distribution));
  }
  return x;
}

// The forward as the register-resident kernels compute it, in fp32; `subtract_max` false is the
// textbook mistake.
Array host_softmax(const Array& x, std::int64_t rows, std::int64_t features, bool subtract_max = true) {
  Array y(x.dtype, rows * features);
  for (std::int64_t r = 0; r < rows; ++r) {
    float max = -INFINITY;
    for (std::int64_t j = 0; j < features; ++j) max = std::max(max, static_cast<float>(x.get(r * features + j)));
    if (!subtract_max) max = 0.0f;
    std::vector<float> e(static_cast<std::size_t>(features));
    float sum = 0.0f;
    for (std::int64_t j = 0; j < features; ++j) {
      e[static_cast<std::size_t>(j)] = std::exp2((static_cast<float>(x.get(r * features + j)) - max) * 1.44269504f);
      sum += e[static_cast<std::size_t>(j)];
    }
    const float scale = 1.0f / sum;
    for (std::int64_t j = 0; j < features; ++j) y.set(r * features + j, e[static_cast<std::size_t>(j)] * scale);
  }
  return y;
}

TEST(SoftmaxInputs, RowKindsCycleThroughPlainOffsetAndDominantRows) {
  const std::int64_t features = 100;
  const Array x = test_logits(DType::f32, 8, features, Distribution::uniform);
  for (std::int64_t r = 0; r < 8; ++r) {
    double low = INFINITY, high = -INFINITY, second = -INFINITY;
    for (std::int64_t j = 0; j < features; ++j) {
      const double v = x.get(r * features + j);
      low = std::min(low, v);
      if (v > high) {
        second = high;
        high = v;
      } else {
        second = std::max(second, v);
      }
    }
    SCOPED_TRACE(r);
    switch (r % 4) {
      case 0: EXPECT_TRUE(low >= -1 && high <= 1); break;
      case 1: EXPECT_TRUE(low >= 1e4 - 1 && high <= 1e4 + 1); break;
      case 2:
        EXPECT_EQ(high, kSoftmaxDominantLogit);
        EXPECT_GE(high - second, 30);
        EXPECT_EQ(x.get(r * features + softmax_dominant_column(kSeed, r, features)), kSoftmaxDominantLogit);
        break;
      default: EXPECT_TRUE(low >= -1e4 - 1 && high <= -1e4 + 1); break;
    }
  }
  // Large-magnitude rows keep their drawn values, whatever the row.
  EXPECT_EQ(softmax_test_logit(1e31f, 1, 0, features, kSeed, Distribution::large_magnitude), 1e31f);
  EXPECT_EQ(softmax_test_logit(0.5f, 1, 0, features, kSeed, Distribution::uniform), 0.5f + kSoftmaxRowOffset);
}

TEST(SoftmaxReference, AcceptsAnFp32SoftmaxOfEveryRowKindAndDistribution) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (Distribution distribution : all_distributions()) {
      if (dtype == DType::f16 && distribution == Distribution::large_magnitude) continue;
      for (const std::int64_t features : {1, 3, 33, 1000, 4097}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " " + to_string(distribution) + " " + std::to_string(features));
        const Array x = test_logits(dtype, 8, features, distribution);
        const Array y = host_softmax(x, 8, features);
        const Comparison c = check_softmax(dtype, x.data(), y.data(), 8, features);
        EXPECT_TRUE(c.passed()) << c.summary();
        EXPECT_LE(c.rel_l2_error, output_rel_l2_limit(dtype));
      }
    }
  }
}

TEST(SoftmaxReference, RejectsASoftmaxWithoutTheMaxSubtracted) {
  const Array x = test_logits(DType::f32, 4, 256, Distribution::uniform);
  const Comparison c = check_softmax(DType::f32, x.data(), host_softmax(x, 4, 256, false).data(), 4, 256);
  EXPECT_FALSE(c.passed());
  EXPECT_GT(c.non_finite, 0) << c.summary();  // exp(1e4) overflows: inf / inf
}

TEST(SoftmaxReference, RejectsAPerturbedAndAnUnwrittenElement) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    SCOPED_TRACE(to_string(dtype));
    const Array x = test_logits(dtype, 4, 300, Distribution::normal);
    Array y = host_softmax(x, 4, 300);
    y.set(7, y.get(7) * 1.02);  // 2%: past a bf16 ulp (0.8%) and far past fp32's bound
    std::memset(y.bytes.data() + 400 * size_of(dtype), 0xFF, size_of(dtype));  // the poison pattern
    const Comparison c = check_softmax(dtype, x.data(), y.data(), 4, 300);
    EXPECT_EQ(c.mismatches, 2) << c.summary();
    EXPECT_EQ(c.unwritten, 1);
    EXPECT_EQ(c.first_mismatch, 7);
  }
}

// 2^20 equal logits: every y is 2^-20, and fp32's bound there is 2 u (4 * 20 + 19) = 1.18e-5
// relative. A 1.1e-5 error on every element stays inside it but is a relative L2 error past 1e-5.
TEST(SoftmaxReference, RelativeL2LimitFailsAnErrorEveryElementAllows) {
  const std::int64_t features = 1 << 20;
  Array x(DType::f32, features);
  Array y(DType::f32, features);
  for (std::int64_t j = 0; j < features; ++j) {
    x.set(j, 0.75);
    y.set(j, std::ldexp(1.0, -20) * (1 + 1.1e-5));
  }
  const Comparison c = check_softmax(DType::f32, x.data(), y.data(), 1, features);
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.mismatches, 1) << c.summary();
  EXPECT_NEAR(c.rel_l2_error, 1.1e-5, 1e-7);
  for (std::int64_t j = 0; j < features; ++j) y.set(j, std::ldexp(1.0, -20) * (1 + 0.9e-5));
  EXPECT_TRUE(check_softmax(DType::f32, x.data(), y.data(), 1, features).passed());
}

// dx as the kernels compute it: an fp32 dot product (fma), then y * (dy - dot); `with_dot` false
// drops the dot product.
Array host_backward(const Array& y, const Array& dy, std::int64_t rows, std::int64_t features, bool with_dot = true) {
  Array dx(y.dtype, rows * features);
  for (std::int64_t r = 0; r < rows; ++r) {
    float dot = 0.0f;
    for (std::int64_t i = r * features; i < (r + 1) * features; ++i)
      dot = std::fma(static_cast<float>(y.get(i)), static_cast<float>(dy.get(i)), dot);
    if (!with_dot) dot = 0.0f;
    for (std::int64_t i = r * features; i < (r + 1) * features; ++i)
      dx.set(i, static_cast<float>(y.get(i)) * (static_cast<float>(dy.get(i)) - dot));
  }
  return dx;
}

TEST(SoftmaxBackwardReference, AcceptsTheKernelsArithmeticAndRejectsAMissingDotProduct) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (Distribution distribution : {Distribution::uniform, Distribution::normal, Distribution::large_magnitude}) {
      if (dtype == DType::f16 && distribution == Distribution::large_magnitude) continue;
      for (const std::int64_t features : {1, 31, 1000, 8192}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " " + to_string(distribution) + " " + std::to_string(features));
        const Array y = host_softmax(test_logits(dtype, 8, features, distribution), 8, features);
        Array dy(dtype, 8 * features);
        for (std::int64_t i = 0; i < 8 * features; ++i)
          dy.set(i, random_value(kSeed + 1, i, 8 * features, distribution));
        const Comparison good =
            check_softmax_backward(dtype, y.data(), dy.data(), host_backward(y, dy, 8, features).data(), 8, features);
        EXPECT_TRUE(good.passed()) << good.summary();
        if (features > 1) {
          const Array wrong = host_backward(y, dy, 8, features, false);
          EXPECT_FALSE(check_softmax_backward(dtype, y.data(), dy.data(), wrong.data(), 8, features).passed());
        }
      }
    }
  }
}

TEST(SoftmaxRegistry, OpsTestTheIssuesWidthsAndModelTheirTraffic) {
  for (const char* name : {ids::kForward, ids::kBackward}) {
    SCOPED_TRACE(name);
    const Op* op = builtin_registry().find_op(name);
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->dim_names, (std::vector<std::string>{"rows", "features"}));
    EXPECT_EQ(op->dtypes, (std::vector<DType>{DType::f32, DType::bf16, DType::f16}));
    std::set<std::int64_t> widths;
    int large = 0;
    for (const Problem& p : op->test_problems) {
      widths.insert(p.dim("features"));
      large += p.elements() > (1 << 22);
    }
    EXPECT_EQ(large, 3) << "one large problem, in each of three dtypes";
    for (std::int64_t w : {1, 3, 31, 33, 127, 128, 1000, 1023, 4096, 4097, 8192, 65536, 262144})
      EXPECT_TRUE(widths.count(w)) << w;
    const Problem p = op->problem({16384, 8192}, DType::bf16);
    const Work work = op->work(p);
    const double tensor = 16384.0 * 8192 * 2;
    EXPECT_DOUBLE_EQ(work.bytes_read, std::string(name) == ids::kForward ? tensor : 2 * tensor);
    EXPECT_DOUBLE_EQ(work.bytes_written, tensor);
  }
}

TEST(SoftmaxRegistry, RungsSayWhyTheyCannotRunAShape) {
  const Op& forward = *builtin_registry().find_op(ids::kForward);
  const Op& backward = *builtin_registry().find_op(ids::kBackward);
  DeviceInfo hopper, ampere;
  hopper.compute_major = 9;
  ampere.compute_major = 8;
  const Variant& cluster = *forward.find_variant(ids::kCluster);
  const Variant& vectorized = *forward.find_variant(ids::kVectorized);
  const Variant& fused = *backward.find_variant(ids::kFused);
  EXPECT_EQ(why_not(cluster, hopper, forward.problem({7, 262144}, DType::f32)), "");
  EXPECT_NE(why_not(cluster, ampere, forward.problem({7, 262144}, DType::f32)), "");
  EXPECT_NE(why_not(cluster, hopper, forward.problem({7, 262148}, DType::f32)), "");  // too wide
  EXPECT_NE(why_not(cluster, hopper, forward.problem({7, 4097}, DType::f32)), "");    // rows not 16-byte multiples
  EXPECT_NE(why_not(cluster, hopper, forward.problem({7, 4100}, DType::bf16)), "");
  EXPECT_EQ(why_not(cluster, hopper, forward.problem({7, 4104}, DType::bf16)), "");
  EXPECT_EQ(why_not(vectorized, ampere, forward.problem({7, 32768}, DType::f16)), "");
  EXPECT_NE(why_not(vectorized, ampere, forward.problem({7, 32769}, DType::f16)), "");
  EXPECT_EQ(why_not(fused, ampere, backward.problem({7, 16384}, DType::f32)), "");
  EXPECT_NE(why_not(fused, ampere, backward.problem({7, 16385}, DType::f32)), "");
  // The streaming rungs run every test problem (cuDNN's rows depend on cuDNN being installed).
  for (const Op* op : {&forward, &backward}) {
    for (const Variant& v : op->variants) {
      if (v.id == ids::kCluster || v.id == ids::kVectorized || v.id == ids::kFused || v.id == ids::kCudnn) continue;
      for (const Problem& p : op->test_problems) EXPECT_EQ(why_not(v, ampere, p), "") << v.id << " " << p.label();
    }
  }
}

TEST(SoftmaxLibrary, ValidatesBeforeTouchingTheGpu) {
  using test_support::thrown_kind;
  auto* f32 = reinterpret_cast<float*>(std::uintptr_t{0x10000});
  auto* out = reinterpret_cast<float*>(std::uintptr_t{0x20000});
  auto* half = reinterpret_cast<__half*>(std::uintptr_t{0x30000});
  auto* bf16 = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x40000});
  EXPECT_EQ(thrown_kind([&] { softmax(f32, out, -1, 4); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { softmax(f32, out, 4, -1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { softmax<float>(nullptr, out, 2, 3); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { softmax(half, static_cast<__half*>(nullptr), 2, 3); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { softmax(reinterpret_cast<const float*>(std::uintptr_t{0x10002}), out, 2, 3); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { softmax(bf16, reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x40001}), 2, 3); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { softmax(f32, f32 + 5, 2, 3); }), ErrorKind::invalid_argument);  // overlap
  EXPECT_EQ(thrown_kind([&] { softmax(f32, out, std::int64_t{1} << 40, std::int64_t{1} << 40); }),
            ErrorKind::invalid_argument);  // rows * features overflows
  EXPECT_NO_THROW(softmax<float>(nullptr, static_cast<float*>(nullptr), 0, 5));
  EXPECT_NO_THROW(softmax<__half>(nullptr, static_cast<__half*>(nullptr), 5, 0));
  EXPECT_EQ(thrown_kind([&] { softmax_backward(f32, f32, f32 + 1, 2, 3); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { softmax_backward(f32, static_cast<const float*>(nullptr), out, 2, 3); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { softmax_backward(bf16, bf16, bf16, 2, 3); }), ErrorKind::invalid_argument);
  EXPECT_NO_THROW(softmax_backward<float>(nullptr, nullptr, static_cast<float*>(nullptr), 0, 0));
}

}  // namespace
}  // namespace cudalab::harness
