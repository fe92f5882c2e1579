// The CPU reference of the matrix multiply, its error bound, cudalab::gemm's argument checks (all
// raised before any CUDA call, so they run without a GPU), and the op's registration: named
// parameters, pipeline configurations bound by value, the TF32 row's engine, the claims' problems.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cudalab/gemm.hpp"
#include "error_kind.hpp"
#include "harness/registry.hpp"
#include "ops/gemm/ids.hpp"
#include "ops/gemm/reference.hpp"
#include "ops/gemm/variants.hpp"

namespace cudalab {
namespace {

TEST(GemmReference, SmallProductWithStridesAlphaBeta) {
  // A 2x3 in a pitch of 4, B 3x2 in a pitch of 3, C0 2x2 in a pitch of 5.
  const std::vector<float> a = {1, 2, 3, -9, 4, 5, 6, -9};
  const std::vector<float> b = {1, -1, -9, 0, 2, -9, 3, 1, -9};
  const std::vector<float> c0 = {1, 1, -9, -9, -9, 2, -2, -9, -9, -9};
  const auto r = harness::gemm_reference(2, 2, 3, 2.0, a.data(), 4, b.data(), 3, -1.0, c0.data(), 5);
  // A B = [[10, 6], [22, 12]]
  EXPECT_EQ(r.value, (std::vector<double>{19, 11, 42, 26}));
  // |A||B| = [[10, 8], [22, 20]]; bound = 2 |A||B| + |C0|
  EXPECT_EQ(r.bound, (std::vector<double>{21, 17, 46, 42}));
}

TEST(GemmReference, EmptyInnerDimensionGivesBetaC) {
  const std::vector<float> c0 = {3, -4};
  const auto r = harness::gemm_reference(1, 2, 0, 1.0, nullptr, 1, nullptr, 2, 0.5, c0.data(), 2);
  EXPECT_EQ(r.value, (std::vector<double>{1.5, -2}));
}

TEST(GemmReference, BoundGrowsWithK) {
  EXPECT_DOUBLE_EQ(harness::gemm_error_bound(1, 1.0), 4.0 / 16777216.0);
  EXPECT_DOUBLE_EQ(harness::gemm_error_bound(8189, 2.0), 2.0 * 8192.0 / 16777216.0);
  const float out[2] = {1.0f, 2.0f};
  const double value[2] = {1.0, 2.0 + 1e-3};
  const double bound[2] = {1.0, 1.0};
  EXPECT_EQ(harness::compare_gemm(out, 2, value, bound, 100).mismatches, 1);
  EXPECT_EQ(harness::compare_gemm(out, 2, value, bound, 20000).mismatches, 0);
}

TEST(GemmLibrary, RejectsBadArguments) {
  float x[4] = {};
  auto kind = [](auto call) { return test_support::thrown_kind(call); };
  EXPECT_EQ(kind([&] { gemm(-1, 1, 1, 1, x, 1, x, 1, 0, x, 1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind([&] { gemm(2, 2, 3, 1, x, 2, x, 2, 0, x, 2); }), ErrorKind::invalid_argument);  // lda < k
  EXPECT_EQ(kind([&] { gemm(2, 3, 2, 1, x, 2, x, 2, 0, x, 3); }), ErrorKind::invalid_argument);  // ldb < n
  EXPECT_EQ(kind([&] { gemm(2, 3, 2, 1, x, 2, x, 3, 0, x, 2); }), ErrorKind::invalid_argument);  // ldc < n
  EXPECT_EQ(kind([&] { gemm(2, 2, 2, 1, nullptr, 2, x, 2, 0, x, 2); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind([&] { gemm(2, 2, 2, 1, x, 2, x, 2, 0, nullptr, 2); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind([&] { gemm(2, 2, 2, 1, x, 2, x, 2, 0, x, 2, nullptr, Layout::column_major); }),
            ErrorKind::invalid_argument);
  // Empty outputs are accepted and do nothing, even with null pointers.
  EXPECT_NO_THROW(gemm(0, 5, 5, 1, nullptr, 5, nullptr, 5, 0, nullptr, 5));
}

TEST(GemmOp, ProblemsCarryAlphaAndBeta) {
  const harness::Op* op = harness::builtin_registry().find_op(harness::gemm_ids::kOp);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->dim_names, (std::vector<std::string>{"M", "N", "K"}));
  EXPECT_EQ(op->dtypes, (std::vector<DType>{DType::f32}));
  const harness::Problem p = op->problem({64, 32, 16}, DType::f32);
  EXPECT_EQ(p.param("alpha"), 1.5);
  EXPECT_EQ(p.param("beta"), -0.5);
  // beta != 0 reads C: A, B and C read once, C written once, 2 M N K flops.
  const harness::Work w = op->work(p);
  EXPECT_EQ(w.bytes_read, 4.0 * (64 * 16 + 16 * 32 + 64 * 32));
  EXPECT_EQ(w.bytes_written, 4.0 * 64 * 32);
  EXPECT_EQ(w.flops, 2.0 * 64 * 32 * 16);
  EXPECT_EQ(op->work(op->problem({64, 32, 16}, DType::f32, {{"beta", 0.0}})).bytes_read, 4.0 * (64 * 16 + 16 * 32));
  // Up to 2^26 multiply-adds the reference runs on the host; 8192^3 needs the device reference's memory.
  EXPECT_EQ(op->check_device_bytes(op->problem({127, 129, 131}, DType::f32)), 0u);
  EXPECT_GT(op->check_device_bytes(op->problem({8192, 8192, 8192}, DType::f32)), std::size_t{2} << 30);
}

TEST(GemmOp, PipelinedStepsRunTheirConfigurations) {
  namespace ids = harness::gemm_ids;
  const harness::Op& op = *harness::builtin_registry().find_op(ids::kOp);
  auto technique = [&](const std::string& id) {
    const harness::Variant* v = op.find_variant(id);
    return v != nullptr ? v->technique : std::string();
  };
  EXPECT_NE(technique(ids::kVectorized).find("(128x128x8_8x8_s1_thread)"), std::string::npos);
  EXPECT_NE(technique(ids::kDoubleBuffered).find("(128x128x8_8x8_s2_thread)"), std::string::npos);
  EXPECT_NE(technique(ids::kWarpTiledSingleBuffer).find("(128x128x8_8x8_s1_warp)"), std::string::npos);
  EXPECT_NE(technique(ids::kWarpTiled).find("(128x128x8_8x8_s2_warp)"), std::string::npos);
  // Every built configuration is exactly one variant.
  for (const auto& config : gemm_variants::pipeline_configs()) {
    const std::string suffix = "(" + config.name() + ")";
    const auto count = std::count_if(op.variants.begin(), op.variants.end(), [&](const harness::Variant& v) {
      return v.technique.size() >= suffix.size() &&
             v.technique.compare(v.technique.size() - suffix.size(), suffix.size(), suffix) == 0;
    });
    EXPECT_EQ(count, 1) << config.name();
  }
  // A configuration the library does not build is refused by name, not launched.
  EXPECT_EQ(test_support::thrown_kind([] {
              gemm_variants::pipelined_launcher({96, 96, 8, 2, 2, 1, false});
            }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(op.find_variant(ids::kCublasTf32)->engine, harness::Engine::tensor_cores);
  EXPECT_EQ(op.find_variant(ids::kCublas)->engine, harness::Engine::cuda_cores);
}

TEST(GemmOp, ClaimsReadTheirProblems) {
  const harness::Registry& registry = harness::builtin_registry();
  const harness::Op& op = *registry.find_op(harness::gemm_ids::kOp);
  const harness::Problem cube1024 = op.problem({1024, 1024, 1024}, DType::f32);
  const harness::Problem cube8192 = op.problem({8192, 8192, 8192}, DType::f32);
  int found = 0;
  for (const harness::ClaimCheck& claim : registry.claims()) {
    if (claim.id != "C26" && claim.id != "C27" && claim.id != "C28" && claim.id != "C30") continue;
    ++found;
    ASSERT_FALSE(claim.uses.empty()) << claim.id;
    for (const harness::ClaimUse& use : claim.uses)
      EXPECT_EQ(use.problem, claim.id == "C28" ? cube8192 : cube1024) << claim.id << " " << use.variant;
    EXPECT_TRUE(claim.evaluate(nlohmann::json::object()).is_null()) << claim.id;
  }
  EXPECT_EQ(found, 4);
}

}  // namespace
}  // namespace cudalab
