// The selection ops' CPU reference (order, count, poison, host threads' piece boundaries) and
// their registry entries.
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/select/reference.hpp"

namespace cudalab::harness {
namespace {

std::vector<std::int32_t> sequential_select(const std::vector<std::int32_t>& in, std::int32_t threshold) {
  std::vector<std::int32_t> out;
  for (std::int32_t x : in)
    if (x >= threshold) out.push_back(x);
  return out;
}

std::int32_t integer_poison() {
  std::int32_t p;
  std::memset(&p, kIntegerPoisonByte, sizeof p);
  return p;
}

// Whole numbers in [-16, 16], as the ops' uniform inputs, from the harness's own stream.
std::vector<std::int32_t> inputs(std::int64_t n) {
  std::vector<std::int32_t> in(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) in[i] = random_int(7, i, n, Distribution::uniform);
  return in;
}

// The output buffer as a GPU variant leaves it: n elements, the selection first, poison after.
std::vector<std::int32_t> poisoned_output(const std::vector<std::int32_t>& selection, std::size_t n) {
  std::vector<std::int32_t> out(n, integer_poison());
  std::copy(selection.begin(), selection.end(), out.begin());
  return out;
}

TEST(SelectReference, EmptyInputWantsCountZero) {
  const Comparison ok = check_select(nullptr, 0, 0, nullptr, 0);
  EXPECT_TRUE(ok.passed()) << ok.summary();
  EXPECT_EQ(ok.count, 1);
  EXPECT_FALSE(check_select(nullptr, 0, 0, nullptr, 1).passed());
}

TEST(SelectReference, KeepsOrderAndChecksTheCount) {
  const std::vector<std::int32_t> in = {5, -3, 0, 7, -1, 0, INT_MIN, INT_MAX};
  const std::vector<std::int32_t> kept = {5, 0, 7, 0, INT_MAX};
  const auto n = static_cast<std::int64_t>(in.size());
  std::vector<std::int32_t> out = poisoned_output(kept, in.size());
  EXPECT_TRUE(check_select(in.data(), n, 0, out.data(), 5).passed());
  // The count is element K = 5 of the comparison.
  const Comparison wrong_count = check_select(in.data(), n, 0, out.data(), 4);
  EXPECT_EQ(wrong_count.mismatches, 1);
  EXPECT_EQ(wrong_count.first_mismatch, 5);
  // Out of order: two mismatches where 7 and 0 swap.
  std::swap(out[2], out[3]);
  EXPECT_EQ(check_select(in.data(), n, 0, out.data(), 5).mismatches, 2);
  // Thresholds at the extremes: all kept; none kept (the last input, INT_MAX, left out), when out
  // is not looked at, only the count.
  const std::vector<std::int32_t> all = poisoned_output(in, in.size());
  EXPECT_TRUE(check_select(in.data(), n, INT_MIN, all.data(), n).passed());
  const std::vector<std::int32_t> none(in.size(), integer_poison());
  EXPECT_TRUE(check_select(in.data(), n - 1, INT_MAX, none.data(), 0).passed());
}

TEST(SelectReference, PoisonCountsAsUnwrittenUnlessItIsTheAnswer) {
  const std::int32_t poison = integer_poison();
  const std::vector<std::int32_t> in = {1, poison, 2};
  std::vector<std::int32_t> out = {1, poison, 2};
  // poison (-1414812757) is kept by a threshold below it, and is then the right answer.
  EXPECT_TRUE(check_select(in.data(), 3, INT_MIN, out.data(), 3).passed());
  // Not kept at threshold 0: out[1] must be 2, and poison there is an unwritten element.
  const Comparison c = check_select(in.data(), 3, 0, out.data(), 2);
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.first_mismatch, 1);
  // A poisoned count is unwritten too.
  std::int64_t poisoned_count;
  std::memset(&poisoned_count, kIntegerPoisonByte, sizeof poisoned_count);
  out[1] = 2;
  EXPECT_EQ(check_select(in.data(), 3, 0, out.data(), poisoned_count).unwritten, 1);
}

TEST(SelectReference, FindsOneWrongElementAcrossHostThreadPieces) {
  // Large enough to be split over several host threads: each piece must start at the right
  // output position.
  const std::int64_t n = (std::int64_t{1} << 22) + 12345;
  const std::vector<std::int32_t> in = inputs(n);
  const std::vector<std::int32_t> kept = sequential_select(in, 0);
  std::vector<std::int32_t> out = poisoned_output(kept, in.size());
  const auto k = static_cast<std::int64_t>(kept.size());
  const Comparison ok = check_select(in.data(), n, 0, out.data(), k);
  EXPECT_TRUE(ok.passed()) << ok.summary();
  EXPECT_EQ(ok.count, k + 1);
  const std::int64_t wrong = k - 777;
  out[wrong] += 1;
  const Comparison c = check_select(in.data(), n, 0, out.data(), k);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch, wrong);
}

TEST(SelectRegistry, OpsCoverEdgesAndModelTheirSelectivity) {
  const struct {
    const char* name;
    double kept;
  } ops[] = {{"select_if_i32_0", 0.0}, {"select_if_i32_50", 17.0 / 33.0}, {"select_if_i32_100", 1.0}};
  for (const auto& expected : ops) {
    SCOPED_TRACE(expected.name);
    const Op* op = builtin_registry().find_op(expected.name);
    ASSERT_NE(op, nullptr);
    std::vector<std::int64_t> sizes;
    for (const Problem& p : op->test_problems) sizes.push_back(p.n);
    EXPECT_EQ(sizes, (std::vector<std::int64_t>{0, 1, 31, 32, 33, 1000003, 1 << 24, 1 << 28}));
    std::vector<std::int64_t> bench;
    for (const Problem& p : op->bench_problems) bench.push_back(p.n);
    EXPECT_EQ(bench, (std::vector<std::int64_t>{1 << 20, 1 << 28}));
    const Work w = op->work(Problem{3300});
    EXPECT_DOUBLE_EQ(w.bytes_read, 4 * 3300.0);
    EXPECT_DOUBLE_EQ(w.bytes_written, 4 * 3300.0 * expected.kept + 8);
    const Variant* cub = op->find_variant("cub");
    ASSERT_NE(cub, nullptr);
    EXPECT_EQ(cub->role, Role::baseline);
    const Variant* three_pass = op->find_variant("three_pass");
    ASSERT_NE(three_pass, nullptr);
    ASSERT_TRUE(three_pass->unsupported);
    EXPECT_EQ(three_pass->unsupported(DeviceInfo{}, Problem{INT_MAX}), "");
    EXPECT_NE(three_pass->unsupported(DeviceInfo{}, Problem{std::int64_t{1} << 31}), "");
    EXPECT_FALSE(op->find_variant("decoupled_lookback")->unsupported);
  }
}

}  // namespace
}  // namespace cudalab::harness
