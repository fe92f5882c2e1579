// Claim C33 ("flash attention cuts attention memory from O(N^2) to O(N)") without a GPU: the
// attention_memory experiment's registry entry and plot, and the claim's verdict on synthetic
// memory tables shaped like the experiment's: each part holds, holds partly or does not hold as
// the growth of the measured memory moves.
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "claims_test_support.hpp"

#include "harness/registry.hpp"
#include "ops/attention/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = attention_ids;
using test_support::claim_check;
using test_support::kHolds;
using test_support::kNot;
using test_support::kPartly;
using test_support::Outcomes;
using test_support::outcomes;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::int64_t kSeqs[] = {1024, 2048, 4096, 8192, 16384, 32768};

// GiB a run holds at seq.
using Memory = std::function<double(std::int64_t seq)>;

// Q, K, V and O in bf16 plus L in fp32 at 2 x 16 x seq x 128.
double tensors_gib(std::int64_t seq) { return (4.0 * 2 * 16 * 128 * 2 + 2 * 16 * 4) * static_cast<double>(seq) / kGiB; }
// 2 x 16 seq x seq scores of `bytes` each.
double scores_gib(std::int64_t seq, double bytes) {
  return bytes * 2 * 16 * static_cast<double>(seq) * static_cast<double>(seq) / kGiB;
}
// What the runtime adds to a run, whatever its size.
constexpr double kFixedGib = 0.002;

double quadratic_naive(std::int64_t seq) { return tensors_gib(seq) + scores_gib(seq, 4) + kFixedGib; }
double linear_flash(std::int64_t seq) { return tensors_gib(seq) + kFixedGib; }

// The experiment's table: naive (`naive` GiB), cublas (fp32 S and bf16 P) and mma_pipelined
// (`flash` GiB) at every seq; naive and cublas "does not fit" above `scores_fit_to`.
nlohmann::json memory_results(const Memory& naive, const Memory& flash, std::int64_t scores_fit_to = 16384) {
  nlohmann::json rows = nlohmann::json::array();
  for (const std::int64_t seq : kSeqs) {
    const double naive_scores = scores_gib(seq, 4), cublas_scores = scores_gib(seq, 6);
    const double cublas = tensors_gib(seq) + cublas_scores + 0.03;  // cuBLAS's own workspace
    auto add = [&](const char* variant, double held, double scores) {
      const bool fits = scores == 0 || seq <= scores_fit_to;
      rows.push_back({seq, variant, fits ? nlohmann::json(held) : nlohmann::json("-"), tensors_gib(seq) + scores,
                      scores, fits ? ids::kMemoryVerified : ids::kMemoryDoesNotFit});
    };
    add(ids::kNaive, naive(seq), naive_scores);
    add(ids::kCublas, cublas, cublas_scores);
    add(ids::kMmaPipelined, flash(seq), 0);
  }
  const nlohmann::json table = {
      {"name", ids::kMemoryExperiment},
      {"op", ids::kForward},
      {"columns", {"seq", "variant", "device_gib", "needed_gib", "scores_workspace_gib", "status"}},
      {"rows", rows}};
  return {{"experiments", nlohmann::json::array({table})}};
}

TEST(AttentionMemory, ExperimentIsOnTheAttentionPageWithALogLogPlotPerVariant) {
  const Experiment* e = builtin_registry().find_experiment(ids::kMemoryExperiment);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->op, ids::kForward);
  ASSERT_EQ(e->plots.size(), 1u);
  const nlohmann::json& plot = e->plots[0];
  EXPECT_EQ(plot.value("kind", "line"), "line");
  EXPECT_EQ(plot["x"], "seq");
  EXPECT_EQ(plot["y"], "device_gib");
  EXPECT_EQ(plot["series"], "variant");
  EXPECT_TRUE(plot["x_log"].get<bool>());
  EXPECT_TRUE(plot["y_log"].get<bool>());
  const ClaimCheck& c33 = claim_check("C33");
  EXPECT_EQ(c33.page, ids::kForward);
  EXPECT_TRUE(c33.uses.empty());  // it reads the experiment's table, no bench records
}

TEST(AttentionMemory, C33HoldsForQuadraticScoresAndALinearFlashRung) {
  const nlohmann::json v = claim_check("C33").evaluate(memory_results(quadratic_naive, linear_flash));
  ASSERT_FALSE(v.is_null());
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kHolds}));
  // naive, 1024 -> 16384: its growth over the seq ratio 16; the flash rung, 1024 -> 32768: 32^2
  // over its growth, which the fixed costs keep a little under 32 (beyond the claim: holds).
  const double naive_growth = quadratic_naive(16384) / quadratic_naive(1024);
  EXPECT_NEAR(v["parts"][0]["predicted"].get<double>(), 16.0, 1e-12);
  EXPECT_NEAR(v["parts"][0]["measured"].get<double>(), naive_growth / 16, 1e-9);
  EXPECT_NEAR(v["parts"][1]["predicted"].get<double>(), 32.0, 1e-12);
  EXPECT_NEAR(v["parts"][1]["measured"].get<double>(), 1024 / (linear_flash(32768) / linear_flash(1024)), 1e-9);
  EXPECT_GT(v["parts"][1]["measured"].get<double>(), 32.0);
  const std::string measured = v["measured"];
  EXPECT_NE(measured.find("naive 0.158 GiB at seq 1024 -> 32.5 GiB at 16384"), std::string::npos) << measured;
  EXPECT_NE(measured.find("does not fit at 32768 (needs 129.0 GiB)"), std::string::npos) << measured;
  EXPECT_NE(measured.find("at seq 16384 naive holds"), std::string::npos) << measured;
  EXPECT_EQ(v["verdict"].get<std::string>().find("O(N^2): naive, seq 1024 -> 16384"), 0u) << v["verdict"];
}

TEST(AttentionMemory, C33FailsItsFlashPartWhenTheFlashRungHoldsTheScores) {
  const ClaimCheck& c33 = claim_check("C33");
  // A flash rung that kept a seq x seq buffer grows like naive: 32^2 over a ~1000x growth is ~1.
  const nlohmann::json scores_kept = c33.evaluate(memory_results(quadratic_naive, quadratic_naive));
  EXPECT_EQ(outcomes(scores_kept), (Outcomes{kHolds, kNot}));
  EXPECT_LT(scores_kept["parts"][1]["fraction"].get<double>(), 0.1);
  // Growing as seq^1.4 cuts 60% of the power the claim says flash removes.
  const nlohmann::json most = c33.evaluate(
      memory_results(quadratic_naive, [](std::int64_t seq) { return 0.03 * std::pow(seq / 1024.0, 1.4); }));
  EXPECT_EQ(outcomes(most), (Outcomes{kHolds, kPartly}));
  EXPECT_NEAR(most["parts"][1]["fraction"].get<double>(), 0.6, 1e-9);
}

TEST(AttentionMemory, C33FailsItsQuadraticPartWhenNaiveGrowsLinearly) {
  const nlohmann::json v = claim_check("C33").evaluate(
      memory_results([](std::int64_t seq) { return 1.5 * tensors_gib(seq); }, linear_flash));
  EXPECT_EQ(outcomes(v), (Outcomes{kNot, kHolds}));
}

TEST(AttentionMemory, C33JudgesOnlyWhatRanAndIsNullWithoutTheTable) {
  const ClaimCheck& c33 = claim_check("C33");
  EXPECT_TRUE(c33.evaluate(nlohmann::json::object()).is_null());
  // A GPU where the scores fit at the smallest seq only: the flash part alone.
  const nlohmann::json small_gpu = c33.evaluate(memory_results(quadratic_naive, linear_flash, 1024));
  EXPECT_EQ(outcomes(small_gpu), (Outcomes{kHolds}));
  EXPECT_NE(small_gpu["measured"].get<std::string>().find("naive verified at fewer than two seqs"), std::string::npos);
  // Nothing verified, or a table without the columns the claim reads.
  nlohmann::json none = memory_results(quadratic_naive, linear_flash, 0);
  for (auto& row : none["experiments"][0]["rows"]) row[5] = ids::kMemoryDoesNotFit;
  EXPECT_TRUE(c33.evaluate(none).is_null());
  nlohmann::json renamed = memory_results(quadratic_naive, linear_flash);
  renamed["experiments"][0]["columns"][2] = "held_mib";
  EXPECT_TRUE(c33.evaluate(renamed).is_null());
}

}  // namespace
}  // namespace cudalab::harness
