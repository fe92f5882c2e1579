// The tutorial claims vector add answers: C01 (copies inside a loop), C02 (shared-memory staging)
// and C03 (memory bound, ~0.1% of FP32 peak). Each reads records through the op's own ids at the
// largest bench problem.
#include "harness/claims.hpp"
#include "core/format.hpp"
#include "harness/registry.hpp"
#include "ops/vecadd/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = vecadd_ids;

// C01: the hoisted loop should be many times faster, because the in-loop version leaves the GPU idle.
nlohmann::json claim_c01(const nlohmann::json& results) {
  const auto* table = experiment(results, ids::kHostPattern);
  if (table == nullptr) return nullptr;
  double in_loop = 0, hoisted = 0, busy = 0;
  for (const auto& row : (*table)["rows"]) {
    if (row[0].get<std::int64_t>() != 1024) continue;
    if (row[1] == "copies_in_loop") {
      in_loop = row[3].get<double>();
      busy = row[6].get<double>();
    } else {
      hoisted = row[3].get<double>();
    }
  }
  if (in_loop <= 0 || hoisted <= 0) return nullptr;
  const double ratio = in_loop / hoisted;
  return verdict(
      "C01", "Hoisting the copies and the sync out of a 1000-iteration loop (1024 floats) makes it many times faster",
      "seed 003", "many times faster (ratio >= 3); GPU idle most of the time in the loop",
      "in loop " + format_fixed(in_loop, 2) + " ms, hoisted " + format_fixed(hoisted, 2) + " ms; GPU busy " +
          format_fixed(100 * busy, 1) + "% of the in-loop run",
      ratio, ratio >= 3 && busy < 0.5 ? "holds" : (ratio > 1 ? "holds partly" : "does not hold"));
}

// C02: staging the operands through shared memory lowers the kernel's time.
nlohmann::json claim_c02(const nlohmann::json& results, const Problem& problem) {
  const auto* plain = timed_record(results, ids::kOp, ids::kOnePerThread, problem);
  const auto* staged = timed_record(results, ids::kOp, ids::kSharedStaging, problem);
  if (plain == nullptr || staged == nullptr) return nullptr;
  const double ratio = median_ms(*plain) / median_ms(*staged);
  return verdict(
      "C02", "Staging vector-add operands through shared memory lowers the kernel's time", "seed 003",
      "shared_staging faster than one_per_thread (ratio > 1)",
      "one_per_thread " + format_fixed(median_ms(*plain), 4) + " ms, shared_staging " +
          format_fixed(median_ms(*staged), 4) + " ms at " + problem.label(),
      ratio, ratio > 1.03 ? "holds" : "does not hold: each value is used once, so staging adds work and saves none");
}

// C03: vector add is memory bound, 1/12 FLOP per byte, at most ~0.1% of FP32 peak.
nlohmann::json claim_c03(const nlohmann::json& results, const Problem& problem) {
  const auto* best = fastest_record(results, ids::kOp, problem);
  const double fp32_tflops = results.value("ceilings", nlohmann::json::object()).value("fp32_tflops", 0.0);
  if (best == nullptr || fp32_tflops <= 0) return nullptr;
  const auto& point = (*best)["roofline"];
  const double flop_fraction = point.value("tflops", 0.0) / fp32_tflops;
  std::string outcome;
  if (point.value("bound", "") != "memory") {
    outcome = "does not hold: the roofline puts it on the compute side";
  } else if (flop_fraction <= 0.0015) {
    outcome = "holds";
  } else {
    outcome = "holds partly: memory bound, but this GPU's bandwidth-to-FLOP ratio lets it reach " +
              format_fixed(100 * flop_fraction, 2) + "% of FP32 peak, not ~0.1%";
  }
  return verdict("C03", "Vector add is memory bound: 1/12 FLOP/byte, at most ~0.1% of FP32 peak", "seed 000",
                 "memory bound; <= ~0.1% of FP32 peak",
                 (*best)["variant"].get<std::string>() + " at " + problem.label() + ": " +
                     format_fixed(100 * point.value("fraction", 0.0), 1) + "% of its memory roofline, " +
                     format_fixed(100 * flop_fraction, 3) + "% of measured FP32 peak",
                 flop_fraction, outcome);
}

}  // namespace

void register_vecadd_claims(Registry& registry) {
  const Problem largest = registry.find_op(ids::kOp)->problem({1 << 28}, DType::f32);
  registry.add(ClaimCheck{"C01", ids::kOp, {}, claim_c01});
  registry.add(ClaimCheck{"C02",
                          ids::kOp,
                          {{ids::kOp, ids::kOnePerThread, largest}, {ids::kOp, ids::kSharedStaging, largest}},
                          [largest](const nlohmann::json& results) { return claim_c02(results, largest); }});
  registry.add(
      ClaimCheck{"C03", ids::kOp, {{ids::kOp, ids::kVectorized, largest}}, [largest](const nlohmann::json& results) {
                   return claim_c03(results, largest);
                 }});
}

}  // namespace cudalab::harness
