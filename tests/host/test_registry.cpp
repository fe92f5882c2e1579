#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "cudalab/error.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"

namespace cudalab::harness {
namespace {

TEST(BuiltinRegistry, EveryOpIsCompleteAndHasABaseline) {
  const Registry& registry = builtin_registry();
  ASSERT_FALSE(registry.ops().empty());
  for (const Op& op : registry.ops()) {
    SCOPED_TRACE(op.name);
    EXPECT_FALSE(op.bench_problems.empty());
    EXPECT_FALSE(op.test_problems.empty());
    for (const Problem& p : op.test_problems) {
      EXPECT_EQ(p.shape.size(), op.shape_names.size()) << p.label();
      if (p.n == 0) continue;
      const Work w = op.work(p);
      EXPECT_GT(w.bytes_read + w.bytes_written, 0.0) << p.label();
      EXPECT_GE(op.device_bytes(p), static_cast<std::size_t>(w.bytes_read + w.bytes_written)) << p.label();
    }
    const bool has_baseline =
        std::any_of(op.variants.begin(), op.variants.end(), [](const Variant& v) { return v.role == Role::baseline; });
    EXPECT_TRUE(has_baseline) << "every ladder is shown beside its vendor library";
    std::set<std::string> ids;
    for (const Variant& v : op.variants) EXPECT_TRUE(ids.insert(v.id).second) << v.id;
  }
}

TEST(Problem, ShapedProblemsCarryTheirProductAndLabel) {
  const Problem p = Problem::shaped({8192, 64, 8192});
  EXPECT_EQ(p.n, std::int64_t{8192} * 64 * 8192);
  EXPECT_EQ(p.label(), "8192x64x8192");
  EXPECT_EQ(Problem{1000}.label(), "n=1000");
  EXPECT_NE(p, Problem::shaped({8192, 8192, 64}));
}

TEST(BuiltinRegistry, VecaddTestSizesCoverTheEdges) {
  const Op* op = builtin_registry().find_op("vecadd");
  ASSERT_NE(op, nullptr);
  std::set<std::int64_t> sizes;
  for (const Problem& p : op->test_problems) sizes.insert(p.n);
  for (std::int64_t n : {1, 31, 32, 33, 1000003, 1 << 24}) EXPECT_TRUE(sizes.count(n)) << n;
  EXPECT_GT(op->device_bytes(Problem{*sizes.rbegin()}) / 3, std::size_t{1} << 31)
      << "one array of the largest size must pass 2^31 bytes";
}

TEST(BuiltinRegistry, VecaddWorkModelCountsThreeStreams) {
  const Work w = builtin_registry().find_op("vecadd")->work(Problem{100});
  EXPECT_DOUBLE_EQ(w.bytes_read, 800);
  EXPECT_DOUBLE_EQ(w.bytes_written, 400);
  EXPECT_DOUBLE_EQ(w.flops, 100);
}

TEST(BuiltinRegistry, NamesResolve) {
  const Registry& registry = builtin_registry();
  EXPECT_NE(registry.find_op("vecadd"), nullptr);
  EXPECT_NE(registry.find_op("vecadd")->find_variant("vectorized"), nullptr);
  EXPECT_EQ(registry.find_op("vecadd")->find_variant("nosuch"), nullptr);
  EXPECT_EQ(registry.find_op("nosuch"), nullptr);
  EXPECT_NE(registry.find_experiment("vecadd_host_pattern"), nullptr);
}

Op minimal_op(const std::string& name) {
  Op op;
  op.name = name;
  op.summary = "test op";
  op.work = [](const Problem&) { return Work{}; };
  op.device_bytes = [](const Problem&) { return std::size_t{0}; };
  op.host_bytes = op.device_bytes;
  op.make_workload = [](const Problem&) { return std::unique_ptr<Workload>(); };
  Variant v;
  v.id = "only";
  v.technique = "does nothing";
  v.launch = [](Workload&, cudaStream_t) {};
  op.variants = {v};
  return op;
}

TEST(Registry, RejectsDuplicateNamesAndIncompleteEntries) {
  Registry registry;
  registry.add(minimal_op("a"));
  EXPECT_THROW(registry.add(minimal_op("a")), Error);

  Op twice = minimal_op("b");
  twice.variants.push_back(twice.variants.front());
  EXPECT_THROW(registry.add(twice), Error);

  Op no_launcher = minimal_op("c");
  no_launcher.variants.front().launch = nullptr;
  EXPECT_THROW(registry.add(no_launcher), Error);

  Op no_variants = minimal_op("d");
  no_variants.variants.clear();
  EXPECT_THROW(registry.add(no_variants), Error);

  Experiment clash{"a", "a", "clashes with an op", [](const ExperimentContext&) { return nlohmann::json(); }};
  EXPECT_THROW(registry.add(clash), Error);
  EXPECT_EQ(registry.ops().size(), 1u);
}

}  // namespace
}  // namespace cudalab::harness

namespace cudalab::harness {
namespace {

TEST(Claims, SpeedupVerdictComparesGainsNotRatios) {
  EXPECT_EQ(speedup_verdict(1.18, 1.2), "holds");
  EXPECT_EQ(speedup_verdict(1.06, 1.2).rfind("holds partly", 0), 0u);  // 6% against 20%
  EXPECT_EQ(speedup_verdict(0.97, 1.2), "does not hold");
  EXPECT_EQ(speedup_verdict(7.0, 8.0), "holds");
  EXPECT_EQ(speedup_verdict(3.0, 8.0).rfind("holds partly", 0), 0u);
}

}  // namespace
}  // namespace cudalab::harness
