#include <gtest/gtest.h>

#include "harness/statistics.hpp"

namespace cudalab::harness {
namespace {

TEST(Summarize, OddCountMedianIsMiddleValue) {
  const Summary s = summarize({5.0, 1.0, 3.0});
  EXPECT_EQ(s.count, 3);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.stdrel, 2.0 / 3.0);  // sample std 2, mean 3
}

TEST(Summarize, EvenCountMedianAveragesTheMiddlePair) { EXPECT_DOUBLE_EQ(summarize({4.0, 1.0, 2.0, 3.0}).median, 2.5); }

TEST(Summarize, EmptyAndSingle) {
  EXPECT_EQ(summarize({}).count, 0);
  const Summary one = summarize({7.0});
  EXPECT_DOUBLE_EQ(one.median, 7.0);
  EXPECT_DOUBLE_EQ(one.stdrel, 0.0);
}

TEST(StoppingRule, NeedsMinimumSamplesEvenWhenQuiet) {
  StoppingRule rule;
  rule.min_samples = 5;
  EXPECT_FALSE(should_stop({1.0, 1.0, 1.0}, 0.0, rule));
  EXPECT_TRUE(should_stop({1.0, 1.0, 1.0, 1.0, 1.0}, 0.0, rule));
}

TEST(StoppingRule, NoisySamplesContinueUntilBudget) {
  StoppingRule rule;
  rule.min_samples = 3;
  rule.target_stdrel = 0.01;
  rule.budget_seconds = 1.0;
  const std::vector<double> noisy = {1.0, 2.0, 1.0, 2.0};
  EXPECT_FALSE(should_stop(noisy, 0.5, rule));
  EXPECT_TRUE(should_stop(noisy, 1.5, rule));
}

TEST(StoppingRule, MaxSamplesAlwaysStops) {
  StoppingRule rule;
  rule.min_samples = 1;
  rule.max_samples = 2;
  EXPECT_TRUE(should_stop({1.0, 9.0}, 0.0, rule));
}

}  // namespace
}  // namespace cudalab::harness
