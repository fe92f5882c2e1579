#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "cudalab/error.hpp"
#include "harness/claims.hpp"
#include "harness/cudnn_library.hpp"
#include "harness/registry.hpp"
#include "harness/workload.hpp"

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
      if (p.elements() == 0) continue;
      const Work w = op.work(p);
      EXPECT_GT(w.bytes_read + w.bytes_written, 0.0) << p.label();
      // The tensors hold at least the minimum traffic the work model counts. (Variants' workspace
      // sizes are left out: CUB's size queries need a device.)
      EXPECT_GE(workload_device_bytes(op, p, {}), static_cast<std::size_t>(w.bytes_read + w.bytes_written))
          << p.label();
    }
    const bool has_baseline =
        std::any_of(op.variants.begin(), op.variants.end(), [](const Variant& v) { return v.role == Role::baseline; });
    EXPECT_TRUE(has_baseline) << "every ladder is shown beside its vendor library";
    // Every dtype the op lists is implemented by some ladder variant and some baseline.
    for (DType dtype : op.dtypes) {
      EXPECT_TRUE(std::any_of(op.variants.begin(), op.variants.end(), [&](const Variant& v) {
        return v.role == Role::ladder && v.supports(dtype);
      })) << to_string(dtype);
    }
  }
}

TEST(BuiltinRegistry, ProblemsAreDistinctWithinEachList) {
  for (const Op& op : builtin_registry().ops()) {
    for (const auto* problems : {&op.bench_problems, &op.test_problems}) {
      std::set<std::string> keys;
      for (const Problem& p : *problems) EXPECT_TRUE(keys.insert(p.key()).second) << op.name << " " << p.label();
    }
  }
}

TEST(Problem, KeysTellShapesDtypesAndParametersApart) {
  const Problem a({{"M", 8192}, {"N", 64}, {"K", 8192}}, DType::f32);
  const Problem b({{"M", 8192}, {"N", 8192}, {"K", 64}}, DType::f32);
  const Problem c({{"M", 8192}, {"N", 64}, {"K", 8192}}, DType::bf16);
  EXPECT_EQ(a.elements(), b.elements());
  EXPECT_NE(a, b) << "two shapes with the same product are two problems";
  EXPECT_NE(a, c) << "the same shape in another dtype is another problem";
  EXPECT_EQ(a.size_label(), "8192x64x8192");
  EXPECT_EQ(a.key(), "dtype=f32;M=8192;N=64;K=8192");
  const Problem scan({{"n", 1000}}, DType::i32, {{"exclusive", 1}});
  EXPECT_EQ(scan.label(), "n=1000 i32 exclusive=1");
  EXPECT_NE(scan, Problem({{"n", 1000}}, DType::i32, {{"exclusive", 0}}));
  EXPECT_EQ(scan.dim("n"), 1000);
  EXPECT_EQ(scan.param("exclusive"), 1.0);
  EXPECT_THROW(scan.dim("M"), Error);
  EXPECT_THROW(scan.param("eps"), Error);
  EXPECT_EQ(format_param(1.5), "1.5");
  EXPECT_EQ(format_param(-0.5), "-0.5");
  EXPECT_EQ(format_param(4096), "4096");
}

TEST(ComputeUnit, FollowsTheEngineAndTheDtype) {
  EXPECT_EQ(compute_unit(Engine::cuda_cores, DType::f32), ComputeUnit::fp32_cuda_cores);
  EXPECT_EQ(compute_unit(Engine::cuda_cores, DType::bf16), ComputeUnit::fp32_cuda_cores);
  EXPECT_EQ(compute_unit(Engine::cuda_cores, DType::i32), ComputeUnit::integer);
  EXPECT_EQ(compute_unit(Engine::cuda_cores, DType::f64), ComputeUnit::fp64_cuda_cores);
  EXPECT_EQ(compute_unit(Engine::tensor_cores, DType::f32), ComputeUnit::tf32_tensor_cores);
  EXPECT_EQ(compute_unit(Engine::tensor_cores, DType::bf16), ComputeUnit::bf16_tensor_cores);
  EXPECT_EQ(compute_unit(Engine::tensor_cores, DType::f16), ComputeUnit::fp16_tensor_cores);
}

TEST(BuiltinRegistry, VecaddTestSizesCoverTheEdges) {
  const Op* op = builtin_registry().find_op("vecadd");
  ASSERT_NE(op, nullptr);
  std::set<std::int64_t> sizes;
  for (const Problem& p : op->test_problems) sizes.insert(p.dim("n"));
  for (std::int64_t n : {1, 31, 32, 33, 1000003, 1 << 24}) EXPECT_TRUE(sizes.count(n)) << n;
  const Problem largest = op->problem({*sizes.rbegin()}, DType::f32);
  EXPECT_GT(workload_device_bytes(*op, largest, {}) / 3, std::size_t{1} << 31)
      << "one array of the largest size must pass 2^31 bytes";
}

// A run skips only the variants whose workspace does not fit: at seq 16384 the scores of the naive
// attention rung (seq^2 floats a head) need 16 GiB beside tensors the flash rungs run in alone.
TEST(BuiltinRegistry, AttentionVariantsNeedTheirOwnWorkspaceOnly) {
  const Op* op = builtin_registry().find_op("attention");
  ASSERT_NE(op, nullptr);
  const Problem p = op->problem({1, 16, 16384, 128}, DType::bf16);
  const Variant* naive = op->find_variant("naive");
  const Variant* flash = op->find_variant("mma_pipelined");
  ASSERT_NE(naive, nullptr);
  ASSERT_NE(flash, nullptr);
  const std::vector<const Variant*> both = {naive, flash};
  const std::size_t tensors = variant_device_bytes(*op, p, both, *flash);
  EXPECT_GE(variant_device_bytes(*op, p, both, *naive), tensors + (std::size_t{16} << 30));
  EXPECT_EQ(workload_device_bytes(*op, p, both), variant_device_bytes(*op, p, both, *naive));
  EXPECT_LT(tensors, std::size_t{1} << 30);
}

TEST(BuiltinRegistry, VecaddWorkModelCountsThreeStreamsOfItsDtype) {
  const Op* op = builtin_registry().find_op("vecadd");
  const Work w = op->work(op->problem({100}, DType::f32));
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

// Every claim's uses resolve (Registry::add checks them; this says so for the shipped set), and
// every claim of CLAIMS.md that names records names at least one.
TEST(BuiltinRegistry, ClaimsReadRegisteredVariantsAtBenchProblems) {
  const Registry& registry = builtin_registry();
  EXPECT_FALSE(registry.claims().empty());
  for (const ClaimCheck& claim : registry.claims()) {
    for (const ClaimUse& use : claim.uses) {
      const Op* op = registry.find_op(use.op);
      ASSERT_NE(op, nullptr) << claim.id;
      EXPECT_NE(op->find_variant(use.variant), nullptr) << claim.id << " " << use.variant;
      EXPECT_NE(std::find(op->bench_problems.begin(), op->bench_problems.end(), use.problem), op->bench_problems.end())
          << claim.id << " " << use.problem.label();
    }
  }
}

struct NoArgs {
  using Element = float;
};
struct NoBinding {
  template <typename Args>
  static Args bind(const Problem&, Tensors&) {
    return {};
  }
};
void do_nothing(const NoArgs&, cudaStream_t) {}

Op minimal_op(const std::string& name) {
  Op op;
  op.name = name;
  op.summary = "test op";
  op.dim_names = {"n"};
  op.dtypes = {DType::f32};
  op.tensors = {{"x", TensorRole::input, {}, [](const Problem& p) { return p.dim("n"); }}};
  op.bench_problems = cross(op, {{8}}, op.dtypes);
  op.test_problems = op.bench_problems;
  op.work = [](const Problem&) { return Work{}; };
  op.check = [](const CheckContext&) { return Comparison{}; };
  op.variants = {make_variant<NoBinding>("only", "does nothing", Role::ladder, do_nothing)};
  return op;
}

ClaimCheck claim_reading(const std::string& op, const std::string& variant, const Problem& problem,
                         const std::string& id = "C34") {
  return ClaimCheck{id, op, {{op, variant, problem}}, [](const nlohmann::json&) { return nlohmann::json(); }};
}

TEST(Registry, RejectsDuplicateNamesAndIncompleteEntries) {
  Registry registry;
  registry.add(minimal_op("a"));
  EXPECT_THROW(registry.add(minimal_op("a")), Error);

  Op twice = minimal_op("b");
  twice.variants.push_back(twice.variants.front());
  EXPECT_THROW(registry.add(twice), Error);

  Op no_launcher = minimal_op("c");
  no_launcher.variants.front().bind = nullptr;
  EXPECT_THROW(registry.add(no_launcher), Error);

  Op no_variants = minimal_op("d");
  no_variants.variants.clear();
  EXPECT_THROW(registry.add(no_variants), Error);

  Op untested_dtype = minimal_op("e");
  untested_dtype.dtypes.push_back(DType::i32);
  EXPECT_THROW(registry.add(untested_dtype), Error) << "every dtype needs a test problem";

  Op foreign_dtype = minimal_op("f");
  foreign_dtype.bench_problems.push_back(Problem({{"n", 8}}, DType::bf16));
  EXPECT_THROW(registry.add(foreign_dtype), Error) << "a problem of a dtype the op does not list";

  Op wrong_dims = minimal_op("g");
  wrong_dims.test_problems.push_back(Problem({{"M", 8}}, DType::f32));
  EXPECT_THROW(registry.add(wrong_dims), Error);

  Experiment clash{"a", "a", "clashes with an op", [](const ExperimentContext&) { return nlohmann::json(); }};
  EXPECT_THROW(registry.add(clash), Error);
  EXPECT_EQ(registry.ops().size(), 1u);
}

TEST(Registry, RejectsClaimsThatNameWhatIsNotRegistered) {
  Registry registry;
  registry.add(minimal_op("a"));
  const Problem benched = registry.find_op("a")->bench_problems.front();
  EXPECT_THROW(registry.add(claim_reading("nosuch", "only", benched)), Error);
  EXPECT_THROW(registry.add(claim_reading("a", "renamed", benched)), Error);
  EXPECT_THROW(registry.add(claim_reading("a", "only", Problem({{"n", 9}}, DType::f32))), Error)
      << "a problem bench does not time";
  EXPECT_THROW(registry.add(claim_reading("a", "only", benched, "C99")), Error) << "not in the catalog";
  EXPECT_NO_THROW(registry.add(claim_reading("a", "only", benched)));
}

TEST(Op, BuildsProblemsWithDefaultsAndRefusesWhatItDoesNotTake) {
  Op op = minimal_op("a");
  op.params = {{"exclusive", 0}};
  const Problem p = op.problem({5}, DType::f32, {{"exclusive", 1}});
  EXPECT_EQ(p.param("exclusive"), 1.0);
  EXPECT_EQ(op.problem({5}, DType::f32).param("exclusive"), 0.0);
  EXPECT_THROW(op.problem({5, 6}, DType::f32), Error);
  EXPECT_THROW(op.problem({5}, DType::i32), Error);
  EXPECT_THROW(op.problem({5}, DType::f32, {{"eps", 1e-5}}), Error);
}

TEST(MakeVariant, DispatchesOnTheProblemsDtype) {
  Variant v = make_variant<NoBinding>("only", "does nothing", Role::ladder, do_nothing);
  EXPECT_EQ(v.dtypes, std::vector<DType>{DType::f32});
  EXPECT_TRUE(v.supports(DType::f32));
  EXPECT_FALSE(v.supports(DType::bf16));
  Tensors none;
  EXPECT_TRUE(static_cast<bool>(v.bind(Problem({{"n", 1}}, DType::f32), none)));
  EXPECT_THROW(v.bind(Problem({{"n", 1}}, DType::i32), none), Error);
  EXPECT_EQ(why_not(v, DeviceInfo{}, Problem({{"n", 1}}, DType::i32)), "not implemented for i32");
}

}  // namespace
}  // namespace cudalab::harness

// The cuDNN baselines' loader: either cuDNN 9 is there, or the reason says where it was sought
// (the row is then skipped with it). Asked twice, it answers the same (loaded once per process).
TEST(CudnnLibrary, LoadsOrSaysWhereItLooked) {
  std::string missing;
  void* library = cudalab::harness::cudnn_library(&missing);
  if (library != nullptr) {
    EXPECT_TRUE(missing.empty());
  } else {
    EXPECT_EQ(missing.rfind("cuDNN not found: tried libcudnn.so.9", 0), 0u) << missing;
  }
  std::string again;
  EXPECT_EQ(cudalab::harness::cudnn_library(&again), library);
  EXPECT_EQ(again, missing);
}
