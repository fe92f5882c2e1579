// The one verdict rule: every outcome of every verdict function occurs, and the catalog holds the
// 37 claims.
#include <set>

#include <gtest/gtest.h>

#include "cudalab/error.hpp"
#include "harness/claim_catalog.hpp"
#include "harness/claims.hpp"
#include "harness/verdict.hpp"

namespace cudalab::harness {
namespace {

TEST(JudgeRatio, EachOutcomeOccursForSpeedups) {
  // Claimed 4x: f = log(measured) / log(4).
  EXPECT_EQ(judge_ratio("x", 4.0, 4.0).outcome, Outcome3::holds);
  EXPECT_EQ(judge_ratio("x", 4.0, 9.0).outcome, Outcome3::holds) << "beyond the claim in its direction";
  EXPECT_EQ(judge_ratio("x", 4.0, 3.1).outcome, Outcome3::holds);         // f = 0.816
  EXPECT_EQ(judge_ratio("x", 4.0, 2.5).outcome, Outcome3::holds_partly);  // f = 0.661
  EXPECT_EQ(judge_ratio("x", 4.0, 2.5).wording, "holds partly: right direction, 66% of the claimed effect");
  EXPECT_EQ(judge_ratio("x", 1000.0, 248.0).wording, "holds partly: right direction, 79% of the claimed effect")
      << "f = 0.798 is rounded down";
  EXPECT_EQ(judge_ratio("x", 4.0, 1.5).outcome, Outcome3::does_not_hold);  // f = 0.292
  EXPECT_EQ(judge_ratio("x", 4.0, 1.5).wording, "does not hold: right direction, 29% of the claimed effect");
  EXPECT_EQ(judge_ratio("x", 4.0, 0.9).wording, "does not hold: the opposite direction");
  EXPECT_NEAR(judge_ratio("x", 4.0, 2.0).fraction, 0.5, 1e-12);
  EXPECT_EQ(judge_ratio("x", 4.0, 2.0).outcome, Outcome3::holds_partly) << "f = 0.5 is the partly boundary";
}

TEST(JudgeRatio, FractionsAndSlowdownsUseTheSameLogs) {
  // A claimed fraction of 0.5 (half the bandwidth): measuring 0.45 holds, 0.8 is 32% of the effect.
  EXPECT_EQ(judge_ratio("x", 0.5, 0.45).outcome, Outcome3::holds);
  EXPECT_EQ(judge_ratio("x", 0.5, 0.8).outcome, Outcome3::does_not_hold);
  EXPECT_EQ(judge_ratio("x", 0.5, 1.2).wording, "does not hold: the opposite direction");
  // The review's examples: C10 claimed 6.2x, measured 1.36x; C28 claimed 1.2x, measured 1.051x.
  EXPECT_EQ(judge_ratio("x", 6.2, 1.36).outcome, Outcome3::does_not_hold);
  EXPECT_EQ(judge_ratio("x", 1.2, 1.051).outcome, Outcome3::does_not_hold);
}

TEST(JudgeRatio, RefusesRatiosItCannotJudge) {
  EXPECT_THROW(judge_ratio("x", 1.0, 2.0), Error) << "a claim of no effect is a range";
  EXPECT_THROW(judge_ratio("x", -2.0, 2.0), Error);
  EXPECT_THROW(judge_ratio("x", 2.0, 0.0), Error);
}

TEST(JudgeRange, EachOutcomeOccurs) {
  EXPECT_EQ(judge_range("x", 2.0, 5.0, 3.0).outcome, Outcome3::holds);
  EXPECT_EQ(judge_range("x", 2.0, 5.0, 2.0).outcome, Outcome3::holds);
  EXPECT_EQ(judge_range("x", 2.0, 5.0, 1.5).outcome, Outcome3::holds_partly);
  EXPECT_EQ(judge_range("x", 2.0, 5.0, 7.0).outcome, Outcome3::holds_partly);
  EXPECT_EQ(judge_range("x", 2.0, 5.0, 1.08).wording, "does not hold: below the claimed range by 1.9x");
  EXPECT_EQ(judge_range("x", 2.0, 5.0, 8.0).outcome, Outcome3::does_not_hold);
  EXPECT_EQ(judge_range("x", 0.5, 1.0, 0.0).wording, "does not hold: 0, below the claimed range");
  EXPECT_THROW(judge_range("x", 5.0, 2.0, 3.0), Error);
  EXPECT_THROW(judge_range("x", 2.0, 5.0, -1.0), Error);
}

TEST(VerdictList, NamesEveryPartWhenThereAreSeveral) {
  const std::vector<PartVerdict> parts = {judge_ratio("2-way", 2.0, 1.9), judge_ratio("32-way", 32.0, 2.0)};
  EXPECT_EQ(verdict_list(parts), "2-way: holds; 32-way: does not hold: right direction, 20% of the claimed effect");
  EXPECT_EQ(verdict_list({judge_ratio("only", 2.0, 2.0)}), "holds");
}

TEST(ClaimVerdict, CarriesTheCatalogTextAndEachPart) {
  const nlohmann::json v =
      claim_verdict("C10", "6.2x", "1.36x at 8192x8192 f32", {judge_ratio("padded over tiled", 6.2, 1.36)});
  EXPECT_EQ(v["id"], "C10");
  EXPECT_NE(v["claim"].get<std::string>().find("[32][33]"), std::string::npos);
  EXPECT_EQ(v["parts"].size(), 1u);
  EXPECT_EQ(v["parts"][0]["outcome"], "does not hold");
  EXPECT_DOUBLE_EQ(v["ratio"].get<double>(), 1.36);
  EXPECT_THROW(claim_verdict("C99", "", "", {judge_ratio("x", 2.0, 2.0)}), Error);
  EXPECT_THROW(claim_verdict("C10", "", "", {}), Error);
}

TEST(ClaimCatalog, HoldsTheThirtySevenClaimsOnce) {
  std::set<std::string> ids;
  for (const ClaimText& c : claim_catalog()) {
    EXPECT_TRUE(ids.insert(c.id).second) << c.id;
    EXPECT_GT(std::string(c.claim).size(), 10u) << c.id;
  }
  EXPECT_EQ(ids.size(), 37u);
  EXPECT_NE(find_claim_text("C37"), nullptr);
  EXPECT_EQ(find_claim_text("C38"), nullptr);
}

}  // namespace
}  // namespace cudalab::harness
