// The execution page's host side: the registry entries of the divergence and instruction-cost
// experiments, and the verdicts of claims C22 and C25 on synthetic tables shaped like their
// results, each shown with a part that comes out differently when the measurement moves.
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "claims_test_support.hpp"

#include "harness/registry.hpp"

namespace cudalab::harness {
namespace {

using test_support::claim_check;
using test_support::kHolds;
using test_support::kNot;
using test_support::kPartly;
using test_support::Outcomes;
using test_support::outcomes;

nlohmann::json results_with(const nlohmann::json& table) { return {{"experiments", nlohmann::json::array({table})}}; }

TEST(ExecutionRegistry, DivergenceAndInstructionCostsAreOnTheExecutionPageWithTheirPlots) {
  for (const char* name : {"warp_divergence", "instruction_costs"}) {
    const Experiment* e = builtin_registry().find_experiment(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->op, "execution") << name;
    EXPECT_EQ(e->plots.size(), 1u) << name;
  }
  EXPECT_EQ(builtin_registry().find_experiment("warp_divergence")->plots[0]["series"], "layout");
  EXPECT_EQ(builtin_registry().find_experiment("instruction_costs")->plots[0]["kind"], "bar");
  for (const char* id : {"C22", "C25"}) EXPECT_EQ(claim_check(id).page, "execution") << id;
}

// The divergence table: the divergent layout's slowdowns at 2, 4 and 32 paths as given, the
// others and the warp-aligned layout's near 1x.
nlohmann::json divergence_results(double two, double four, double all) {
  const std::string lane = "lane % paths (divergent)", warp = "warp % paths (warp-aligned)";
  nlohmann::json rows = nlohmann::json::array();
  const std::vector<std::pair<int, double>> lane_slowdowns = {{1, 1.0}, {2, two},   {4, four},
                                                              {8, 7.9}, {16, 15.8}, {32, all}};
  for (const auto& [paths, slowdown] : lane_slowdowns)
    rows.push_back({paths, lane, 32 / paths, 0.3 * slowdown, slowdown, 108.0 / slowdown});
  for (const int paths : {1, 2, 4, 8, 16, 32}) rows.push_back({paths, warp, 32, 0.3, 1.0, 108.0});
  return results_with({{"name", "warp_divergence"},
                       {"op", "execution"},
                       {"columns",
                        {"paths", "layout", "lanes_per_path_in_a_warp", "median_ms", "slowdown_vs_1_path",
                         "useful_fma_per_clock_per_sm"}},
                       {"rows", rows}});
}

TEST(ExecutionClaims, C22JudgesEachStatedPathCountOnTheDivergentLayout) {
  const ClaimCheck& c22 = claim_check("C22");
  // Issue-bound paths: k paths take k times the issue slots of one.
  const nlohmann::json v = c22.evaluate(divergence_results(1.99, 3.97, 31.5));
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kHolds, kHolds}));
  EXPECT_EQ(v["verdict"], "2 paths: 2x slower: holds; 4 paths: 4x slower: holds; 32 paths: 32x slower: holds");
  EXPECT_NE(v["measured"].get<std::string>().find("aligned to warps: 1.00x / 1.00x / 1.00x"), std::string::npos)
      << v["measured"];
  // Were divergent paths overlapped (a latency-bound kernel), the slowdowns would fall short.
  const nlohmann::json overlapped = c22.evaluate(divergence_results(1.6, 4.0, 4.0));
  EXPECT_EQ(outcomes(overlapped), (Outcomes{kPartly, kHolds, kNot}));
  EXPECT_EQ(overlapped["parts"][2]["verdict"], "does not hold: right direction, 40% of the claimed effect");
  EXPECT_TRUE(c22.evaluate(nlohmann::json::object()).is_null());
}

// The instruction-cost table: only the rows the claim reads, with their median times; the
// shift and mask steps take 1 ms.
nlohmann::json cost_results(double div_pow2, double div_varying, double mod_pow2, double mod_varying) {
  auto row = [](const std::string& op, double ms) { return nlohmann::json{op, "integer", ms, 1, 1, 1, 1980, 1}; };
  return results_with(
      {{"name", "instruction_costs"},
       {"op", "execution"},
       {"columns",
        {"op", "kind", "median_ms", "gops_per_s", "ns_per_op_per_sm", "ops_per_clock_per_sm", "sm_mhz_measured",
         "cost_vs_fp32_fma"}},
       {"rows",
        {row("x / d, d = 8 at run time (same every step)", div_pow2),
         row("K / x (a new divisor every step)", div_varying), row("x / 7 (compile-time constant)", 2.3),
         row("x >> s, s = 3 at run time", 1.0), row("x % d, d = 8 at run time (same every step)", mod_pow2),
         row("K % x (a new divisor every step)", mod_varying), row("x % 7 (compile-time constant)", 3.0),
         row("x & m, m = 7 at run time", 1.0)}}});
}

TEST(ExecutionClaims, C25JudgesDivisionAndModuloAgainstShiftAndMaskAtFourTimes) {
  const ClaimCheck& c25 = claim_check("C25");
  const nlohmann::json v = c25.evaluate(cost_results(5.0, 8.0, 6.0, 9.0));
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kHolds, kHolds, kHolds}));
  EXPECT_NE(v["measured"].get<std::string>().find("by a compile-time 7 (the compiler's multiply and shift): 2.3x and "
                                                  "3.0x"),
            std::string::npos)
      << v["measured"];
  EXPECT_NEAR(v["parts"][0]["measured"].get<double>(), 5.0, 1e-12);
  // A division the compiler made cheap (2.5x a shift) holds partly; a modulo at 1.2x a mask does not.
  const nlohmann::json cheap = c25.evaluate(cost_results(2.5, 8.0, 1.2, 9.0));
  EXPECT_EQ(outcomes(cheap), (Outcomes{kPartly, kHolds, kNot, kHolds}));
  EXPECT_EQ(cheap["parts"][2]["verdict"], "does not hold: right direction, 13% of the claimed effect");
  EXPECT_TRUE(c25.evaluate(nlohmann::json::object()).is_null());
}

}  // namespace
}  // namespace cudalab::harness
