#include <cmath>

#include <gtest/gtest.h>

#include "harness/random.hpp"

namespace cudalab::harness {
namespace {

constexpr std::int64_t kSamples = 200000;

TEST(Random, SameSeedSameStreamDifferentSeedDifferentStream) {
  int differing = 0;
  for (std::int64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(random_value(7, i, 1000, Distribution::uniform), random_value(7, i, 1000, Distribution::uniform));
    differing += random_value(7, i, 1000, Distribution::uniform) != random_value(8, i, 1000, Distribution::uniform);
  }
  EXPECT_GT(differing, 990);
}

TEST(Random, UniformStaysInRangeWithMeanNearZero) {
  double sum = 0;
  for (std::int64_t i = 0; i < kSamples; ++i) {
    const float x = random_value(1, i, kSamples, Distribution::uniform);
    ASSERT_GE(x, -1.0f);
    ASSERT_LT(x, 1.0f);
    sum += x;
  }
  EXPECT_NEAR(sum / kSamples, 0.0, 0.01);
}

TEST(Random, NormalHasUnitVariance) {
  double sum = 0, squares = 0;
  for (std::int64_t i = 0; i < kSamples; ++i) {
    const double x = random_value(2, i, kSamples, Distribution::normal);
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    squares += x * x;
  }
  const double mean = sum / kSamples;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(squares / kSamples - mean * mean, 1.0, 0.02);
}

TEST(Random, IntegersAreWholeAndBounded) {
  bool saw_low = false, saw_high = false;
  for (std::int64_t i = 0; i < kSamples; ++i) {
    const float x = random_value(3, i, kSamples, Distribution::integers);
    ASSERT_EQ(x, std::floor(x));
    ASSERT_GE(x, -16.0f);
    ASSERT_LE(x, 16.0f);
    saw_low |= x == -16.0f;
    saw_high |= x == 16.0f;
  }
  EXPECT_TRUE(saw_low && saw_high);
}

TEST(Random, SortedIsIncreasingAndAllEqualIsConstant) {
  float previous = -2.0f;
  for (std::int64_t i = 0; i < 1000; ++i) {
    const float x = random_value(4, i, 1000, Distribution::sorted);
    ASSERT_GE(x, previous);
    previous = x;
    ASSERT_EQ(random_value(4, i, 1000, Distribution::all_equal), 0.75f);
  }
  EXPECT_EQ(previous, 1.0f);
}

TEST(Random, LargeMagnitudeIsLargeWithBothSigns) {
  int negative = 0;
  for (std::int64_t i = 0; i < 1000; ++i) {
    const float x = random_value(5, i, 1000, Distribution::large_magnitude);
    ASSERT_GE(std::fabs(x), 1e30f);
    ASSERT_LT(std::fabs(x), 1.0001e32f);
    negative += x < 0;
  }
  EXPECT_GT(negative, 400);
  EXPECT_LT(negative, 600);
}

TEST(Random, IntegerStreamsStayInTheirRanges) {
  bool saw_negative = false, saw_huge = false;
  for (std::int64_t i = 0; i < 10000; ++i) {
    const std::int32_t x = random_int(6, i, 10000, Distribution::uniform);
    ASSERT_GE(x, -16);
    ASSERT_LE(x, 16);
    saw_negative |= x < 0;
    ASSERT_EQ(random_int(6, i, 10000, Distribution::all_equal), 3);
    saw_huge |= random_int(6, i, 10000, Distribution::large_magnitude) > (1 << 30);
  }
  EXPECT_TRUE(saw_negative);
  EXPECT_TRUE(saw_huge);
  EXPECT_EQ(random_int(6, 0, 100, Distribution::sorted), -16);
  EXPECT_EQ(random_int(6, 99, 100, Distribution::sorted), 16);
}

TEST(Random, BytesCoverEveryValueUnlessConstant) {
  int seen[256] = {};
  for (std::int64_t i = 0; i < 100000; ++i) ++seen[random_byte(9, i, 100000, Distribution::uniform)];
  for (int v = 0; v < 256; ++v) ASSERT_GT(seen[v], 250) << v;  // ~390 expected each
  EXPECT_EQ(random_byte(9, 123, 1000, Distribution::all_equal), 7);
  EXPECT_EQ(random_byte(9, 999, 1000, Distribution::sorted), 255);
}

TEST(Random, DistributionNamesRoundTrip) {
  for (Distribution d : all_distributions()) {
    Distribution parsed;
    ASSERT_TRUE(parse_distribution(to_string(d), &parsed));
    EXPECT_EQ(parsed, d);
  }
  Distribution ignored;
  EXPECT_FALSE(parse_distribution("zeros", &ignored));
}

}  // namespace
}  // namespace cudalab::harness
