// Every registered variant of every op, verified against the CPU reference at every test size of
// its op, on fresh random inputs (a new seed per test, printed on failure).
#include <cctype>
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
  Problem problem;
};

// Keeps gtest from printing the struct as raw bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.op << "/" << c.variant << " " << c.problem.label(); }

// Cases are every (variant, test problem) pair the variant implements the dtype of; a variant that
// cannot run a problem for another reason (architecture, shape) skips with that reason.

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Op& op : builtin_registry().ops())
    for (const Variant& v : op.variants)
      for (const Problem& p : op.test_problems)
        if (v.supports(p.dtype)) cases.push_back({op.name, v.id, p});
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
  if (variant.role == Role::broken)
    GTEST_SKIP() << "broken on purpose: a race may give the right sum by luck at any one size; "
                    "BrokenVariants.AreShownFailing checks it fails where it should";
  try {
    require_fits(op, c.problem, {c.variant});
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  // Small sizes are checked on every distribution; larger ones on the op's headline bench
  // distribution only (each pass there moves gigabytes through the host check).
  std::vector<Distribution> distributions = {op.bench_distributions.front()};
  if (c.problem.elements() <= (1 << 24)) distributions = all_distributions();
  KernelTimer timer;
  for (Distribution distribution : distributions) {
    RunOptions options;
    options.variants = {c.variant};
    options.seed = fresh_seed();
    options.distribution = distribution;
    options.check_only = true;
    SCOPED_TRACE(std::string("distribution ") + to_string(distribution) + ", seed " + std::to_string(options.seed));
    const std::vector<Record> records = run_problem(op, c.problem, options, Ceilings{}, timer, nullptr);
    ASSERT_EQ(records.size(), 1u);
    const Record& r = records.front();
    if (r.outcome == Outcome::skipped) GTEST_SKIP() << r.skip_reason;
    EXPECT_EQ(r.outcome, Outcome::passed) << r.comparison.summary();
  }
}

// A variant kept broken on purpose (a tutorial's race) must be seen failing at a size where the
// race has room to act: 2^24 elements, up to five fresh inputs, whole numbers (exact checks, so
// an error cannot hide inside a rounding tolerance).
TEST(BrokenVariants, AreShownFailing) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  int broken = 0;
  for (const Op& op : builtin_registry().ops()) {
    for (const Variant& v : op.variants) {
      if (v.role != Role::broken) continue;
      ++broken;
      KernelTimer timer;
      int failures = 0;
      for (int attempt = 0; attempt < 5 && failures == 0; ++attempt) {
        RunOptions options;
        options.variants = {v.id};
        options.seed = fresh_seed();
        options.check_only = true;
        options.distribution = Distribution::integers;
        // A 1-D op is checked at 2^24 elements; a shaped op has no such problem of its own rank, so
        // its largest test problem of the variant's first dtype stands in.
        Problem problem = op.test_problems.back();
        if (op.dim_names.size() == 1) problem = op.problem({1 << 24}, v.dtypes.front());
        const auto records = run_problem(op, problem, options, Ceilings{}, timer, nullptr);
        failures += records.front().outcome == Outcome::failed;
      }
      EXPECT_GT(failures, 0) << op.name << "/" << v.id << " passed five times: its bug no longer shows";
    }
  }
  if (broken == 0) GTEST_SKIP() << "no variant is broken on purpose";
}

// gtest names take letters, digits and underscores only. "__" after the op puts each op's cases in
// a test process of their own (cmake/GTestGroups.cmake); op names hold single underscores only.
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.op + "__" + info.param.variant + "__" + info.param.problem.key();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryVariant, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace cudalab::harness
