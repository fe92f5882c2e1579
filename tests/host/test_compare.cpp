#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "harness/compare.hpp"

namespace cudalab::harness {
namespace {

TEST(Tolerance, AcceptsWithinRelativeAndAbsoluteBounds) {
  const Tolerance t{1e-3, 1e-6};
  EXPECT_TRUE(t.accepts(1.0005, 1.0));
  EXPECT_FALSE(t.accepts(1.002, 1.0));
  EXPECT_TRUE(t.accepts(5e-7, 0.0));  // atol covers a zero reference
  EXPECT_FALSE(t.accepts(2e-6, 0.0));
}

TEST(Tolerance, NanNeverPassesAndInfinityMustMatch) {
  const Tolerance loose{1.0, 1.0};
  EXPECT_FALSE(loose.accepts(std::nan(""), 1.0));
  EXPECT_FALSE(loose.accepts(std::numeric_limits<double>::infinity(), 1.0));
  EXPECT_TRUE(loose.accepts(std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()));
}

TEST(Tolerance, ExactRejectsAnyDifference) {
  EXPECT_TRUE(Tolerance::exact().accepts(3.0, 3.0));
  EXPECT_FALSE(Tolerance::exact().accepts(3.0, std::nextafter(3.0, 4.0)));
}

TEST(Tolerance, Fp32RoundedAcceptsOneUlpButNotTwo) {
  const float x = 1.5f;
  const float one_ulp = std::nextafter(x, 2.0f);
  const float two_ulp = std::nextafter(one_ulp, 2.0f);
  EXPECT_TRUE(Tolerance::fp32_rounded().accepts(one_ulp, x));
  EXPECT_FALSE(Tolerance::fp32_rounded().accepts(two_ulp, x));
}

TEST(Tolerance, Fp32SumScalesWithLogOfTermsAndMagnitude) {
  const Tolerance small = Tolerance::fp32_sum(1024, 100.0);
  const Tolerance large = Tolerance::fp32_sum(1 << 20, 100.0);
  const double eps = std::numeric_limits<float>::epsilon();
  EXPECT_DOUBLE_EQ(small.atol, 2.0 * 10 * eps * 100.0);
  EXPECT_DOUBLE_EQ(large.atol, 2.0 * 20 * eps * 100.0);
  const Tolerance f64 = Tolerance::fp64_sum(1 << 20, 100.0);
  EXPECT_DOUBLE_EQ(f64.atol, 2.0 * 20 * std::numeric_limits<double>::epsilon() * 100.0);
}

TEST(Compare, CountsMismatchesUnwrittenAndNonFinite) {
  std::vector<float> out = {1.0f, 2.0f, 3.5f, 0.0f, std::nanf("")};
  std::uint32_t poison = 0xFFFFFFFFu;
  std::memcpy(&out[3], &poison, sizeof poison);
  const Comparison c =
      compare_fp32(out.data(), 5, Tolerance::fp32_rounded(), [](std::int64_t i) { return double(i + 1); });
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.count, 5);
  EXPECT_EQ(c.mismatches, 3);  // 3.5 vs 3, the poison, the NaN
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.non_finite, 1);
  EXPECT_EQ(c.first_mismatch, 2);
  EXPECT_DOUBLE_EQ(c.first_mismatch_out, 3.5);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 0.5);
  EXPECT_NE(c.summary().find("FAILED"), std::string::npos);
}

TEST(Compare, ReportsRelativeL2Error) {
  const std::vector<float> out = {3.0f, 4.0f};
  const std::vector<double> ref = {3.0, 4.5};
  const Comparison c = compare_fp32(out.data(), 2, Tolerance{0.2, 0}, [&](std::int64_t i) { return ref[i]; });
  EXPECT_TRUE(c.passed());
  EXPECT_NEAR(c.rel_l2_error, 0.5 / std::sqrt(9.0 + 20.25), 1e-12);
}

TEST(Compare, ParallelChunksAgreeWithOneChunk) {
  const std::int64_t n = (1 << 22) + 17;  // several worker chunks
  std::vector<float> out(n);
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(i % 1000);
  out[n - 5] = -1.0f;
  out[3000000] = -2.0f;
  const Comparison c = compare_fp32(out.data(), n, Tolerance::exact(), [](std::int64_t i) { return double(i % 1000); });
  EXPECT_EQ(c.count, n);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.first_mismatch, 3000000);
}

// An element's own bound replaces the builder's tolerance for it alone; the counts, first
// mismatch and L2 sums are the same as for any other element.
TEST(Compare, AddWithinHoldsOneElementToItsOwnBound) {
  ComparisonBuilder b(Tolerance::exact());
  b.add_within(0, 1.25, 1.0, 0.5, false);    // within its bound, not within the builder's
  b.add_within(1, 1.25, 1.0, 0.125, false);  // outside its bound
  b.add(2, 2.5, 2.0, false);                 // the builder's exact tolerance
  b.add_within(3, 0.0, 1.0, 10.0, true);     // never written: fails whatever the bound
  const Comparison c = b.finish();
  EXPECT_EQ(c.count, 4);
  EXPECT_EQ(c.mismatches, 3);
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.first_mismatch, 1);
  EXPECT_DOUBLE_EQ(c.first_mismatch_out, 1.25);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(c.tolerance.rtol, 0.0);
  EXPECT_DOUBLE_EQ(c.tolerance.atol, 0.0);
}

// Each thread's builder starts a cache line of its own (compare.hpp: kHostCacheLine).
TEST(Compare, BuildersInAVectorShareNoCacheLine) {
  static_assert(alignof(ComparisonBuilder) == kHostCacheLine);
  static_assert(sizeof(ComparisonBuilder) % kHostCacheLine == 0);
  std::vector<ComparisonBuilder> builders(3, ComparisonBuilder(Tolerance::exact()));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(builders.data()) % kHostCacheLine, 0u);
}

TEST(Compare, EmptyOutputPasses) {
  const Comparison c = compare_fp32(nullptr, 0, Tolerance::exact(), [](std::int64_t) { return 0.0; });
  EXPECT_TRUE(c.passed());
  EXPECT_EQ(c.count, 0);
}

// The L2 limit holds the error to limit * ||ref|| plus the floors' norm, and to nothing less.
TEST(L2Error, FloorsExcuseOnlyTheirOwnPart) {
  L2Error subnormal;  // an fp16 output of 6.6e-6 rounded by 2.6e-8: 4e-3 of itself
  subnormal.add(2.6e-8, 6.6e-6, 0.0);
  EXPECT_FALSE(subnormal.within(output_rel_l2_limit(DType::f16)));
  L2Error excused;
  excused.add(2.6e-8, 6.6e-6, std::ldexp(1.0, -25));  // half fp16's subnormal step
  EXPECT_TRUE(excused.within(output_rel_l2_limit(DType::f16)));
  L2Error beyond;
  beyond.add(1e-6, 6.6e-6, std::ldexp(1.0, -25));  // 30x the floor: still a failure
  EXPECT_FALSE(beyond.within(output_rel_l2_limit(DType::f16)));
  L2Error merged;
  merged.merge(excused);
  merged.merge(beyond);
  EXPECT_FALSE(merged.within(output_rel_l2_limit(DType::f16)));
  EXPECT_EQ(output_rel_l2_limit(DType::f32), 1e-5);
  EXPECT_EQ(output_rel_l2_limit(DType::bf16), 4e-3);
}

}  // namespace
}  // namespace cudalab::harness
