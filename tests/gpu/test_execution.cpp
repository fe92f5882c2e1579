// The execution experiments run on the GPU: each checks its own kernels' results (a wrong one
// throws), returns a full table, and gives its claim a verdict from it.
#include <string>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "harness/results.hpp"
#include "ops/execution/ids.hpp"

namespace cudalab::harness {
namespace {

class ExecutionExperiment : public ::testing::TestWithParam<std::string> {};

TEST_P(ExecutionExperiment, RunsChecksAndIsJudged) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const Experiment* e = builtin_registry().find_experiment(GetParam());
  ASSERT_NE(e, nullptr);
  ExperimentContext context;
  context.device = device_info();
  const nlohmann::json table = run_experiment(*e, context);
  ASSERT_FALSE(table["rows"].empty());
  for (const auto& row : table["rows"]) EXPECT_EQ(row.size(), table["columns"].size());
  nlohmann::json results = {{"schema", kResultsSchema},
                            {"records", nlohmann::json::array()},
                            {"experiments", nlohmann::json::array({table})}};
  evaluate_claims(results);
  ASSERT_EQ(results["claims"].size(), 1u) << "one claim per execution experiment";
  EXPECT_FALSE(results["claims"][0]["parts"].empty());
}

INSTANTIATE_TEST_SUITE_P(Registry, ExecutionExperiment,
                         ::testing::Values(execution_ids::kWarpDivergence, execution_ids::kInstructionCosts,
                                           execution_ids::kOccupancy, execution_ids::kSyncCosts));

}  // namespace
}  // namespace cudalab::harness
