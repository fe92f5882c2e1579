// The scan op's CPU reference (wrap-around int32, per-element fp32 tolerance, poison detection
// across the host threads' range boundaries) and its registry entry.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/scan/ids.hpp"
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

// The sizes of `op`'s problems of `dtype` and exclusive = `exclusive`, in order.
std::vector<std::int64_t> sizes_of(const std::vector<Problem>& problems, DType dtype, int exclusive) {
  std::vector<std::int64_t> sizes;
  for (const Problem& p : problems)
    if (p.dtype == dtype && p.param(scan_ids::kExclusive) == exclusive) sizes.push_back(p.dim("n"));
  return sizes;
}

TEST(ScanRegistry, ProblemsCoverEdgesEveryDtypeAndBothKinds) {
  const Op* op = builtin_registry().find_op(scan_ids::kOp);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->dtypes, (std::vector<DType>{DType::i32, DType::f32}));
  for (DType dtype : {DType::i32, DType::f32})
    for (int exclusive : {0, 1}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " exclusive=" + std::to_string(exclusive));
      const std::vector<std::int64_t> sizes = sizes_of(op->test_problems, dtype, exclusive);
      for (std::int64_t n : {0, 1, 31, 32, 33, 1024, 2048, 2049, 3073, 4097, 1000003, 1 << 24, 1 << 28})
        EXPECT_NE(std::find(sizes.begin(), sizes.end(), n), sizes.end()) << n;
    }
  // Bench: the three configurations timed before dtype and kind became problem fields. The
  // single-block variants are timed at n = 1024: C21 compares them there.
  EXPECT_EQ(op->bench_problems.size(), 7u);
  EXPECT_EQ(sizes_of(op->bench_problems, DType::i32, 0), (std::vector<std::int64_t>{1 << 10, 1 << 20, 1 << 28}));
  EXPECT_EQ(sizes_of(op->bench_problems, DType::i32, 1), (std::vector<std::int64_t>{1 << 20, 1 << 28}));
  EXPECT_EQ(sizes_of(op->bench_problems, DType::f32, 0), (std::vector<std::int64_t>{1 << 20, 1 << 28}));
  for (DType dtype : {DType::i32, DType::f32}) {
    const Work w = op->work(op->problem({100}, dtype));
    EXPECT_DOUBLE_EQ(w.bytes_read, 400);
    EXPECT_DOUBLE_EQ(w.bytes_written, 400);
    EXPECT_DOUBLE_EQ(w.flops, 100);
  }
}

TEST(ScanRegistry, SingleBlockVariantsSayWhyTheySkip) {
  const Op* op = builtin_registry().find_op(scan_ids::kOp);
  ASSERT_NE(op, nullptr);
  const DeviceInfo device;
  for (DType dtype : {DType::i32, DType::f32})
    for (int exclusive : {0, 1}) {
      const auto at = [&](std::int64_t n) {
        return op->problem({n}, dtype, {{scan_ids::kExclusive, static_cast<double>(exclusive)}});
      };
      const Variant* hs = op->find_variant(scan_ids::kHillisSteele);
      ASSERT_NE(hs, nullptr);
      EXPECT_EQ(why_not(*hs, device, at(1024)), "");
      EXPECT_NE(why_not(*hs, device, at(1025)), "");
      for (const char* id : {scan_ids::kBlelloch, scan_ids::kBlellochPadded}) {
        const Variant* blelloch = op->find_variant(id);
        ASSERT_NE(blelloch, nullptr);
        EXPECT_EQ(why_not(*blelloch, device, at(2048)), "");
        EXPECT_NE(why_not(*blelloch, device, at(2049)), "");
      }
      EXPECT_EQ(why_not(*op->find_variant(scan_ids::kDecoupledLookback), device, at(std::int64_t{1} << 31)), "");
    }
}

// Each variant's workspace is what its launcher reserves: none for one block, the tile sums of
// every level for the hierarchical scans, a counter and a status word per 4096-element tile for
// the look-back. (CUB's comes from CUB's size query, which needs a GPU.)
TEST(ScanRegistry, WorkspacesAreTheLaunchersOwnSizes) {
  const Op* op = builtin_registry().find_op(scan_ids::kOp);
  ASSERT_NE(op, nullptr);
  const Problem p = op->problem({std::int64_t{1} << 28}, DType::f32, {{scan_ids::kExclusive, 1}});
  for (const Variant& v : op->variants) {
    const bool one_block =
        v.id == scan_ids::kHillisSteele || v.id == scan_ids::kBlelloch || v.id == scan_ids::kBlellochPadded;
    EXPECT_EQ(static_cast<bool>(v.workspace_bytes), !one_block) << v.id;
  }
  // 2^28 / 4096 tiles, plus the counter's word.
  EXPECT_EQ(op->find_variant(scan_ids::kDecoupledLookback)->workspace_bytes(p), ((1u << 16) + 1) * 8);
  // 2^28 / 2048 = 2^17 tile sums (512 KiB), then 64 sums (256 bytes once aligned); one tile above.
  EXPECT_EQ(op->find_variant(scan_ids::kScanThenPropagate)->workspace_bytes(p), (1u << 19) + 256);
  // 1024-element tiles: 2^18 sums (1 MiB), then 256 (1 KiB); one tile above.
  EXPECT_EQ(op->find_variant(scan_ids::kScanThenPropagateHillisSteele)->workspace_bytes(p), (1u << 20) + 1024);
  // 3072-element tiles: 87382 sums, then 29 (256 bytes once aligned).
  EXPECT_EQ(op->find_variant(scan_ids::kReduceThenScan)->workspace_bytes(p), 349696u + 256);
  const Problem empty = op->problem({0}, DType::i32);
  EXPECT_EQ(op->find_variant(scan_ids::kDecoupledLookback)->workspace_bytes(empty), 0u);
}

TEST(ScanRegistry, ClaimC21ReadsTheInclusiveInt32Bench) {
  const Registry& registry = builtin_registry();
  const auto claim = std::find_if(registry.claims().begin(), registry.claims().end(),
                                  [](const ClaimCheck& c) { return c.id == "C21"; });
  ASSERT_NE(claim, registry.claims().end());
  EXPECT_EQ(claim->page, scan_ids::kOp);
  ASSERT_EQ(claim->uses.size(), 6u);
  for (const ClaimUse& use : claim->uses) {
    EXPECT_EQ(use.op, scan_ids::kOp);
    EXPECT_EQ(use.problem.dtype, DType::i32);
    EXPECT_EQ(use.problem.param(scan_ids::kExclusive), 0);
  }
  EXPECT_EQ(claim->uses[0].problem.dim("n"), 1024);
  EXPECT_EQ(claim->uses[2].problem.dim("n"), 1 << 20);
  EXPECT_EQ(claim->uses[5].problem.dim("n"), std::int64_t{1} << 28);
}

// C21 judged from a results document holding its four timed records (ms): the single-block scans at
// n = 1024 and the two per-tile scans of scan-then-propagate at n = 2^28.
nlohmann::json judge_c21(double hs_small, double blelloch_small, double hs_large, double blelloch_large) {
  const auto record = [](const char* variant, std::int64_t n, double ms) {
    return nlohmann::json{{"op", scan_ids::kOp},
                          {"variant", variant},
                          {"distribution", "uniform"},
                          {"problem", {{"key", "dtype=i32;n=" + std::to_string(n) + ";exclusive=0"}}},
                          {"time_ms", {{"median", ms}}}};
  };
  const nlohmann::json results = {
      {"records",
       {record(scan_ids::kHillisSteele, 1024, hs_small), record(scan_ids::kBlellochPadded, 1024, blelloch_small),
        record(scan_ids::kScanThenPropagateHillisSteele, std::int64_t{1} << 28, hs_large),
        record(scan_ids::kScanThenPropagate, std::int64_t{1} << 28, blelloch_large)}}};
  const Registry& registry = builtin_registry();
  const auto claim = std::find_if(registry.claims().begin(), registry.claims().end(),
                                  [](const ClaimCheck& c) { return c.id == "C21"; });
  return claim == registry.claims().end() ? nlohmann::json() : claim->evaluate(results);
}

std::vector<std::string> part_outcomes(const nlohmann::json& claim) {
  std::vector<std::string> list;
  for (const auto& part : claim["parts"]) list.push_back(part["outcome"].get<std::string>());
  return list;
}

// The committed H100 times: Hillis-Steele 0.889 of Blelloch's time at 1024 (fine), and 1.105 at
// 2^28 (Blelloch wins, against the 1.05 taken for "wins"): both parts hold.
TEST(ScanRegistry, ClaimC21HoldsOnTheCommittedTimes) {
  const nlohmann::json c21 = judge_c21(0.004864, 0.005472, 3.189216, 2.88688);
  ASSERT_FALSE(c21.is_null());
  EXPECT_EQ(part_outcomes(c21), (std::vector<std::string>{"holds", "holds"}));
  EXPECT_NEAR(c21["parts"][0]["measured"].get<double>(), 0.004864 / 0.005472, 1e-12);
  EXPECT_NEAR(c21["parts"][1]["measured"].get<double>(), 3.189216 / 2.88688, 1e-12);
}

// Hillis-Steele 1.3x slower at 1024 is within a factor 1.5 of "fine" (0.5-1.1); Hillis-Steele
// faster at 2^28 is the opposite direction; 1.03x at 2^28 is 61% of the 1.05x taken for "wins".
TEST(ScanRegistry, ClaimC21PartsCanFail) {
  const nlohmann::json c21 = judge_c21(1.3, 1.0, 0.95, 1.0);
  ASSERT_FALSE(c21.is_null());
  EXPECT_EQ(part_outcomes(c21), (std::vector<std::string>{"holds partly", "does not hold"}));
  EXPECT_EQ(c21["parts"][1]["verdict"], "does not hold: the opposite direction");
  EXPECT_EQ(judge_c21(3.0, 1.0, 1.03, 1.0)["verdict"],
            "Hillis-Steele fine at n=1024 (0.5-1.1): does not hold: above the claimed range by 2.7x; Blelloch wins "
            "at n=268435456 (taken as 1.05x): holds partly: right direction, 60% of the claimed effect");
}

}  // namespace
}  // namespace cudalab::harness
