// Every registered variant of every op, verified against the CPU reference at every test size of
// its op, on fresh random inputs (a new seed per test, printed on failure).
#include <random>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "harness/registry.hpp"
#include "harness/runner.hpp"

namespace cudalab::harness {
namespace {

struct Case {
  std::string op;
  std::string variant;
  std::int64_t n;
};

// Keeps gtest from printing the struct as raw bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.op << "/" << c.variant << " n=" << c.n; }

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Op& op : builtin_registry().ops())
    for (const Variant& v : op.variants)
      for (const Problem& p : op.test_problems) cases.push_back({op.name, v.id, p.n});
  return cases;
}

std::uint64_t fresh_seed() {
  std::random_device entropy;
  return (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
}

class EveryVariant : public ::testing::TestWithParam<Case> {};

TEST_P(EveryVariant, MatchesTheCpuReference) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const Case& c = GetParam();
  const Op& op = *builtin_registry().find_op(c.op);
  const Variant& variant = *op.find_variant(c.variant);
  try {
    require_fits(op, Problem{c.n});
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  // Small sizes are checked on every distribution; the largest on uniform data only (each pass
  // there moves gigabytes through the host check).
  std::vector<Distribution> distributions = {Distribution::uniform};
  if (c.n <= (1 << 24)) distributions = all_distributions();
  KernelTimer timer;
  for (Distribution distribution : distributions) {
    RunOptions options;
    options.variants = {c.variant};
    options.seed = fresh_seed();
    options.distribution = distribution;
    options.check_only = true;
    SCOPED_TRACE(std::string("distribution ") + to_string(distribution) + ", seed " + std::to_string(options.seed));
    const std::vector<Record> records = run_problem(op, Problem{c.n}, options, Ceilings{}, timer, nullptr);
    ASSERT_EQ(records.size(), 1u);
    const Record& r = records.front();
    if (r.outcome == Outcome::skipped) GTEST_SKIP() << r.skip_reason;
    if (variant.role == Role::broken) {
      EXPECT_EQ(r.outcome, Outcome::failed) << "a variant broken on purpose must be shown failing";
    } else {
      EXPECT_EQ(r.outcome, Outcome::passed) << r.comparison.summary();
      // The output was compared: n elements for an element-wise op, but other ops have other
      // shapes (a histogram's bins, even at n = 0), so only "something" is common to all.
      EXPECT_GT(r.comparison.count, 0);
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.op + "_" + info.param.variant + "_n" + std::to_string(info.param.n);
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryVariant, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace cudalab::harness
