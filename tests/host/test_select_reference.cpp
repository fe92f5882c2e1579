// The selection op's CPU reference (order, count, poison, host threads' piece boundaries) and its
// registry entry.
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/select/ids.hpp"
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

TEST(SelectRegistry, ProblemsCoverEdgesAndModelTheirSelectivity) {
  const Op* op = builtin_registry().find_op(select_ids::kOp);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->dtypes, std::vector<DType>{DType::i32});
  ASSERT_EQ(op->tensors.size(), 3u);
  EXPECT_EQ(op->tensors[2].name, "count");
  EXPECT_EQ(op->tensors[2].dtype, DType::i64);
  const struct {
    double percent;
    double kept;
  } shares[] = {{0, 0.0}, {50, 17.0 / 33.0}, {100, 1.0}};
  for (const auto& expected : shares) {
    SCOPED_TRACE(expected.percent);
    const auto sizes_of = [&](const std::vector<Problem>& problems) {
      std::vector<std::int64_t> sizes;
      for (const Problem& p : problems)
        if (p.param(select_ids::kSelectedPercent) == expected.percent) sizes.push_back(p.dim("n"));
      return sizes;
    };
    EXPECT_EQ(sizes_of(op->test_problems), (std::vector<std::int64_t>{0, 1, 31, 32, 33, 1000003, 1 << 24, 1 << 28}));
    EXPECT_EQ(sizes_of(op->bench_problems), (std::vector<std::int64_t>{1 << 20, 1 << 28}));
    const Work w = op->work(op->problem({3300}, DType::i32, {{select_ids::kSelectedPercent, expected.percent}}));
    EXPECT_DOUBLE_EQ(w.bytes_read, 4 * 3300.0);
    EXPECT_DOUBLE_EQ(w.bytes_written, 4 * 3300.0 * expected.kept + 8);
  }
  EXPECT_EQ(op->bench_problems.size(), 6u);
  const Variant* cub = op->find_variant(select_ids::kCub);
  ASSERT_NE(cub, nullptr);
  EXPECT_EQ(cub->role, Role::baseline);
  EXPECT_TRUE(cub->workspace_bytes);
  const DeviceInfo device;
  const Variant* three_pass = op->find_variant(select_ids::kThreePass);
  ASSERT_NE(three_pass, nullptr);
  EXPECT_EQ(why_not(*three_pass, device, op->problem({INT_MAX}, DType::i32)), "");
  EXPECT_NE(why_not(*three_pass, device, op->problem({std::int64_t{1} << 31}, DType::i32)), "");
  EXPECT_EQ(why_not(*op->find_variant(select_ids::kDecoupledLookback), device,
                    op->problem({std::int64_t{1} << 31}, DType::i32)),
            "");
}

// Each variant's workspace is what its launcher reserves: the flags and the scan's status words
// for three_pass, a counter and a status word per tile for the look-backs (4096- and 8192-element
// tiles). (CUB's comes from CUB's size query, which needs a GPU.)
TEST(SelectRegistry, WorkspacesAreTheLaunchersOwnSizes) {
  const Op* op = builtin_registry().find_op(select_ids::kOp);
  ASSERT_NE(op, nullptr);
  const Problem p = op->problem({std::int64_t{1} << 28}, DType::i32);
  EXPECT_EQ(op->find_variant(select_ids::kThreePass)->workspace_bytes(p), (1u << 30) + ((1u << 16) + 1) * 8);
  EXPECT_EQ(op->find_variant(select_ids::kDecoupledLookback)->workspace_bytes(p), ((1u << 16) + 1) * 8);
  EXPECT_EQ(op->find_variant(select_ids::kDecoupledLookbackStaged)->workspace_bytes(p), ((1u << 15) + 1) * 8);
  const Problem empty = op->problem({0}, DType::i32);
  for (const char* id : {select_ids::kThreePass, select_ids::kDecoupledLookback, select_ids::kDecoupledLookbackStaged})
    EXPECT_EQ(op->find_variant(id)->workspace_bytes(empty), 0u) << id;
}

}  // namespace
}  // namespace cudalab::harness
