// The scan ops' CPU reference (wrap-around int32, per-element fp32 tolerance, poison detection
// across the host threads' range boundaries) and their registry entries.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/scan/reference.hpp"

namespace cudalab::harness {
namespace {

using scan_variants::ScanKind;

std::vector<std::int32_t> sequential_scan(const std::vector<std::int32_t>& in, ScanKind kind) {
  std::vector<std::int32_t> out(in.size());
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (kind == ScanKind::exclusive) std::memcpy(&out[i], &sum, sizeof sum);
    sum += static_cast<std::uint32_t>(in[i]);
    if (kind == ScanKind::inclusive) std::memcpy(&out[i], &sum, sizeof sum);
  }
  return out;
}

std::int32_t integer_poison() {
  std::int32_t p;
  std::memset(&p, kIntegerPoisonByte, sizeof p);
  return p;
}

TEST(ScanReference, Int32SumsWrapAround) {
  const std::vector<std::int32_t> in = {INT_MAX, 1, 5, INT_MIN, -1};
  const std::vector<std::int32_t> inclusive = {INT_MAX, INT_MIN, INT_MIN + 5, 5, 4};
  const std::vector<std::int32_t> exclusive = {0, INT_MAX, INT_MIN, INT_MIN + 5, 5};
  const auto n = static_cast<std::int64_t>(in.size());
  EXPECT_TRUE(check_scan(in.data(), inclusive.data(), n, ScanKind::inclusive).passed());
  EXPECT_TRUE(check_scan(in.data(), exclusive.data(), n, ScanKind::exclusive).passed());
  EXPECT_FALSE(check_scan(in.data(), exclusive.data(), n, ScanKind::inclusive).passed());
  // The sum as a wider type would give: not what the GPU computes.
  std::vector<std::int32_t> saturated = inclusive;
  saturated[1] = INT_MAX;
  const Comparison c = check_scan(in.data(), saturated.data(), n, ScanKind::inclusive);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch, 1);
}

TEST(ScanReference, EmptyInputPasses) {
  const Comparison c = check_scan(static_cast<const std::int32_t*>(nullptr), nullptr, 0, ScanKind::inclusive);
  EXPECT_TRUE(c.passed());
  EXPECT_EQ(c.count, 0);
  EXPECT_TRUE(check_scan(static_cast<const float*>(nullptr), nullptr, 0, ScanKind::exclusive).passed());
}

// Sizes past several checkpoints and split over threads: every element is still checked against
// the right prefix, and a single wrong one is found where it is.
TEST(ScanReference, Int32FindsOneWrongElementInALargeArray) {
  const std::int64_t n = 5 * (std::int64_t{1} << 20) + 12345;
  std::vector<std::int32_t> in(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) in[i] = random_int(7, i, n, Distribution::large_magnitude);
  for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
    std::vector<std::int32_t> out = sequential_scan(in, kind);
    Comparison c = check_scan(in.data(), out.data(), n, kind);
    EXPECT_TRUE(c.passed()) << c.summary();
    EXPECT_EQ(c.count, n);
    const std::int64_t wrong = 3 * (std::int64_t{1} << 20) + 65535;
    out[wrong] += 1;
    c = check_scan(in.data(), out.data(), n, kind);
    EXPECT_EQ(c.mismatches, 1);
    EXPECT_EQ(c.first_mismatch, wrong);
  }
}

TEST(ScanReference, Int32PoisonCountsAsUnwrittenUnlessItIsTheAnswer) {
  const std::int32_t poison = integer_poison();
  // The second prefix sum is exactly the poison value: it cannot be told from an unwritten
  // element, and a correct output must pass.
  const std::vector<std::int32_t> in = {3, poison - 3, 1};
  std::vector<std::int32_t> out = {3, poison, poison + 1};
  EXPECT_TRUE(check_scan(in.data(), out.data(), 3, ScanKind::inclusive).passed());
  out[2] = poison;
  const Comparison c = check_scan(in.data(), out.data(), 3, ScanKind::inclusive);
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.first_mismatch, 2);
}

TEST(ScanReference, Fp32ToleranceFollowsEachPrefixsMagnitude) {
  const std::int64_t n = 1000;
  std::vector<float> in(n, 1.0f);
  in[0] = 1e6f;  // every prefix holds a large magnitude except the exclusive first (0)
  std::vector<float> out(n);
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(sum += in[i]);
  EXPECT_TRUE(check_scan(in.data(), out.data(), n, ScanKind::inclusive).passed());
  // ceil(log2 1000) = 10: the bound at i is 2 * 10 * eps * (1e6 + i) ~ 2.4, so an error of 1
  // passes and one of 8 does not.
  out[500] += 1.0f;
  EXPECT_TRUE(check_scan(in.data(), out.data(), n, ScanKind::inclusive).passed());
  out[500] += 7.0f;
  const Comparison c = check_scan(in.data(), out.data(), n, ScanKind::inclusive);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch, 500);
}

TEST(ScanReference, Fp32SmallPrefixesAreHeldToTheirOwnScale) {
  // A last prefix of magnitude 1e6 must not loosen the check of the first, small ones.
  const std::vector<float> in = {0.5f, 0.25f, 1e6f};
  std::vector<float> out = {0.5f, 0.75f + 0.01f, 1e6f + 0.75f};
  const Comparison c = check_scan(in.data(), out.data(), 3, ScanKind::inclusive);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch, 1);
  // Exclusive: element 0 sums nothing and must be exactly 0.
  std::vector<float> exclusive = {1e-30f, 0.5f, 0.75f};
  EXPECT_FALSE(check_scan(in.data(), exclusive.data(), 3, ScanKind::exclusive).passed());
  exclusive[0] = 0.0f;
  EXPECT_TRUE(check_scan(in.data(), exclusive.data(), 3, ScanKind::exclusive).passed());
}

TEST(ScanReference, Fp32PoisonAndNanFail) {
  const std::vector<float> in = {1.0f, 2.0f, 3.0f};
  std::vector<float> out = {1.0f, 3.0f, 6.0f};
  std::memset(&out[1], kFloatPoisonByte, sizeof(float));
  out[2] = std::numeric_limits<float>::quiet_NaN();
  const Comparison c = check_scan(in.data(), out.data(), 3, ScanKind::inclusive);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.non_finite, 1);
  EXPECT_EQ(c.first_mismatch, 1);
}

TEST(ScanRegistry, OpsCoverEdgesAndSingleBlockVariantsSayWhyTheySkip) {
  for (const char* name : {"scan_inclusive_i32", "scan_exclusive_i32", "scan_inclusive_f32"}) {
    SCOPED_TRACE(name);
    const Op* op = builtin_registry().find_op(name);
    ASSERT_NE(op, nullptr);
    std::vector<std::int64_t> sizes;
    for (const Problem& p : op->test_problems) sizes.push_back(p.n);
    for (std::int64_t n : {0, 1, 31, 32, 33, 1000003, 1 << 24, 1 << 28})
      EXPECT_NE(std::find(sizes.begin(), sizes.end(), n), sizes.end()) << n;
    const Work w = op->work(Problem{100});
    EXPECT_DOUBLE_EQ(w.bytes_read, 400);
    EXPECT_DOUBLE_EQ(w.bytes_written, 400);
    EXPECT_DOUBLE_EQ(w.flops, 100);
    const Variant* hs = op->find_variant("hillis_steele");
    ASSERT_NE(hs, nullptr);
    ASSERT_TRUE(hs->unsupported);
    EXPECT_EQ(hs->unsupported(DeviceInfo{}, Problem{1024}), "");
    EXPECT_NE(hs->unsupported(DeviceInfo{}, Problem{1025}), "");
    const Variant* blelloch = op->find_variant("blelloch_padded");
    ASSERT_NE(blelloch, nullptr);
    EXPECT_EQ(blelloch->unsupported(DeviceInfo{}, Problem{2048}), "");
    EXPECT_NE(blelloch->unsupported(DeviceInfo{}, Problem{2049}), "");
    EXPECT_FALSE(op->find_variant("decoupled_lookback")->unsupported);
  }
  // The single-block variants are timed somewhere: C21 compares them at n = 1024.
  const Op* op = builtin_registry().find_op("scan_inclusive_i32");
  EXPECT_EQ(op->bench_problems.front().n, 1024);
}

}  // namespace
}  // namespace cudalab::harness
