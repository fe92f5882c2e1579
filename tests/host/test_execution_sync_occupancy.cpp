// Claims C23 (occupancy) and C24 (synchronisation costs), judged part by part on synthetic tables
// shaped like the occupancy and sync_costs experiments' output, each shown with parts that come
// out differently when the measurement moves. A registry of just these two experiments is built
// here, so the tests do not depend on the rest of the registry.
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "claims_test_support.hpp"

#include "harness/registry.hpp"

namespace cudalab::harness::execution_experiments {
void register_occupancy(Registry& registry);
void register_sync_costs(Registry& registry);
}  // namespace cudalab::harness::execution_experiments

namespace cudalab::harness {
namespace {

const Registry& execution_registry() {
  static const Registry registry = [] {
    Registry r;
    execution_experiments::register_occupancy(r);
    execution_experiments::register_sync_costs(r);
    return r;
  }();
  return registry;
}

using test_support::kHolds;
using test_support::kNot;
using test_support::kPartly;
using test_support::Outcomes;
using test_support::outcomes;

const ClaimCheck& claim_check(const std::string& id) { return test_support::claim_check(id, execution_registry()); }

TEST(ExecutionRegistry, RegistersBothExperimentsAndTheirClaimsOnTheExecutionPage) {
  const Registry& r = execution_registry();
  for (const char* name : {"occupancy", "sync_costs"}) {
    const Experiment* e = r.find_experiment(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->op, "execution");
    ASSERT_EQ(e->plots.size(), 1u) << name;
  }
  EXPECT_EQ(r.find_experiment("sync_costs")->plots[0].value("kind", ""), "bar");
  EXPECT_EQ(claim_check("C23").page, "execution");
  EXPECT_EQ(claim_check("C24").page, "execution");
}

// ---- C23 ----

nlohmann::json occupancy_row(const std::string& kernel, const std::string& sweep, const std::string& launch,
                             int registers, double occupancy_pct, double median_us) {
  return {kernel, sweep, launch, 1, 256, registers, 0, 1, occupancy_pct, occupancy_pct, median_us, 1.0, "-"};
}

// The stream's tutorial shapes take `small_us` and `large_us`; the 16-load stream reaches
// `occupancy64`% at 64 registers and 100% at 32; the occupancy sweep runs 100% in `full_us` and
// 50% in `half_us`.
nlohmann::json occupancy_results(double small_us, double large_us, int registers64, double occupancy64, double half_us,
                                 double full_us) {
  const nlohmann::json columns = {"kernel",
                                  "sweep",
                                  "launch",
                                  "blocks",
                                  "threads_per_block",
                                  "registers",
                                  "dynamic_smem_bytes",
                                  "blocks_per_sm",
                                  "theoretical_occupancy_pct",
                                  "grid_occupancy_pct",
                                  "median_us",
                                  "relative_speed",
                                  "occupancy_sweep_us"};
  const nlohmann::json rows = {
      occupancy_row("stream", "tutorial", "<<<10,64>>>", 18, 100, small_us),
      occupancy_row("stream", "tutorial", "<<<80,256>>>", 18, 100, large_us),
      occupancy_row("fma_chain", "tutorial", "<<<10,64>>>", 30, 100, 7600),
      occupancy_row("fma_chain", "tutorial", "<<<80,256>>>", 30, 100, 240),
      occupancy_row("stream", "occupancy", "<<<132,256>>>", 18, 12.5, 900),
      occupancy_row("stream", "occupancy", "<<<264,256>>>", 18, 25, 300),
      occupancy_row("stream", "occupancy", "<<<528,256>>>", 18, 50, half_us),
      occupancy_row("stream", "occupancy", "<<<792,256>>>", 18, 75, (half_us + full_us) / 2),
      occupancy_row("stream", "occupancy", "<<<1056,256>>>", 18, 100, full_us),
      occupancy_row("fma_chain", "occupancy", "<<<1056,256>>>", 30, 100, 20),  // another kernel: ignored
      occupancy_row("stream_ilp16", "registers", "__launch_bounds__(256, 1)", 80, 37.5, 95),
      occupancy_row("stream_ilp16", "registers", "__launch_bounds__(256, 4)", registers64, occupancy64, 93),
      occupancy_row("stream_ilp16", "registers", "__launch_bounds__(256, 8)", 32, 100, 94)};
  return {{"experiments", nlohmann::json::array(
                              {{{"name", "occupancy"}, {"op", "execution"}, {"columns", columns}, {"rows", rows}}})}};
}

TEST(ExecutionClaims, C23JudgesTheTutorialShapesTheRegisterCapAndOccupancyAboveHalf) {
  const ClaimCheck& c23 = claim_check("C23");
  // 28x slower (beyond the claimed 2.86x), 64 registers: 50% against 100%, 100% occupancy 2% faster than 50%.
  const nlohmann::json v = c23.evaluate(occupancy_results(20000, 700, 64, 50, 102, 100));
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kHolds, kHolds}));
  EXPECT_NEAR(v["parts"][0]["measured"].get<double>(), 20000.0 / 700.0, 1e-9);
  EXPECT_NEAR(v["parts"][1]["measured"].get<double>(), 2.0, 1e-12);
  EXPECT_NEAR(v["parts"][2]["measured"].get<double>(), 1.02, 1e-12);
  EXPECT_NE(v["measured"].get<std::string>().find("capped at 64 registers"), std::string::npos) << v["measured"];

  // Only 2x slower (66% of the claimed effect on a log scale); a cap the compiler met with 40
  // registers (75%: 1.33x, 41%); and 100% occupancy 1.5x faster than 50% (within 1.5x of the range).
  const nlohmann::json w = c23.evaluate(occupancy_results(1400, 700, 40, 75, 150, 100));
  EXPECT_EQ(outcomes(w), (Outcomes{kPartly, kNot, kPartly}));
  // More occupancy paying off far beyond the range: 2x faster at 100% than at 50%.
  EXPECT_EQ(outcomes(c23.evaluate(occupancy_results(20000, 700, 64, 50, 200, 100)))[2], kNot);
}

TEST(ExecutionClaims, C23NeedsTheOccupancyTableAndItsRows) {
  const ClaimCheck& c23 = claim_check("C23");
  EXPECT_TRUE(c23.evaluate(nlohmann::json{{"experiments", nlohmann::json::array()}}).is_null());
  nlohmann::json results = occupancy_results(20000, 700, 64, 50, 102, 100);
  auto& rows = results["experiments"][0]["rows"];
  rows.erase(rows.begin() + 11);  // the 64-register cap
  EXPECT_TRUE(c23.evaluate(results).is_null());
}

// ---- C24 ----

nlohmann::json sync_row(const std::string& operation, const std::string& setting, double cycles, double ns = -1) {
  return {operation, setting, cycles, ns < 0 ? cycles / 1.98 : ns, "clock64", "ok", "-", "-"};
}

struct SyncCosts {
  double syncthreads = 12, global_free = 450, global_full = 500, shared_full = 300, device_sync_ns = 2500, fence = 300;
};

nlohmann::json sync_results(const SyncCosts& c) {
  const nlohmann::json columns = {"operation", "setting", "cycles_per_op", "ns_per_op",
                                  "timed_by",  "check",   "got",           "right"};
  const nlohmann::json rows = {
      sync_row("__syncthreads", "block of 256", c.syncthreads),
      sync_row("__syncthreads", "block of 1024", 3 * c.syncthreads),
      sync_row("__threadfence", "no pending stores", 150),
      sync_row("__threadfence", "after a global store", c.fence),
      sync_row("atomicAdd, shared", "uncontended", 40),
      sync_row("atomicAdd, shared", "32-way (lanes per address)", 120),
      sync_row("atomicAdd, shared", "full: 256 threads, one address", c.shared_full),
      sync_row("atomicAdd, global", "uncontended", c.global_free),
      sync_row("atomicAdd, global", "full: 256 threads, one address", c.global_full),
      sync_row("grid.sync()", "1 block(s) of 256 per SM, 132 blocks", 3000),
      sync_row("cudaDeviceSynchronize", "idle device", c.device_sync_ns * 1.98, c.device_sync_ns),
      {"counter++ on a shared int (broken on purpose)", "132 blocks of 256, one increment per thread", "-", "-", "-",
       "wrong (broken on purpose)", 1056, 33792}};
  return {{"experiments", nlohmann::json::array(
                              {{{"name", "sync_costs"}, {"op", "execution"}, {"columns", columns}, {"rows", rows}}})}};
}

TEST(ExecutionClaims, C24JudgesEachCostAgainstItsRange) {
  const ClaimCheck& c24 = claim_check("C24");
  const nlohmann::json v = c24.evaluate(sync_results({}));
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kHolds, kHolds, kHolds, kHolds, kHolds}));
  EXPECT_NEAR(v["parts"][4]["measured"].get<double>(), 2.5, 1e-9);  // microseconds

  // A 24-cycle barrier (within 1.5x of 5-20), 2400 cycles on one global address (4x above 600),
  // an idle cudaDeviceSynchronize of 0.4 us (2.5x below 1 us), a 500-cycle fence (within 1.5x).
  SyncCosts slow;
  slow.syncthreads = 24;
  slow.global_full = 2400;
  slow.device_sync_ns = 400;
  slow.fence = 500;
  const nlohmann::json w = c24.evaluate(sync_results(slow));
  EXPECT_EQ(outcomes(w), (Outcomes{kPartly, kHolds, kNot, kHolds, kNot, kPartly}));
  EXPECT_NE(w["verdict"].get<std::string>().find("above the claimed range by 4.0x"), std::string::npos) << w["verdict"];
}

TEST(ExecutionClaims, C24ReadsANegativeDifferenceAsZeroAndNeedsItsRows) {
  const ClaimCheck& c24 = claim_check("C24");
  SyncCosts noise;
  noise.fence = -3;  // fence minus the stores alone came out below zero: no measurable cost
  EXPECT_EQ(outcomes(c24.evaluate(sync_results(noise)))[5], kNot);

  nlohmann::json results = sync_results({});
  results["experiments"][0]["rows"][0][2] = "-";  // the barrier's row without a number
  EXPECT_TRUE(c24.evaluate(results).is_null());
  EXPECT_TRUE(c24.evaluate(nlohmann::json{{"experiments", nlohmann::json::array()}}).is_null());
}

}  // namespace
}  // namespace cudalab::harness
