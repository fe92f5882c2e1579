// Helpers for claim checks: find records in a results document and phrase a verdict. Records are
// found by problem (harness/problem.hpp key) and input distribution; claims are judged on uniform
// inputs unless they say otherwise.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/problem.hpp"

namespace cudalab::harness {

// The timed record of (op, variant, problem), or nullptr.
const nlohmann::json* timed_record(const nlohmann::json& results, const std::string& op, const std::string& variant,
                                   const Problem& problem, const std::string& distribution = "uniform");

// The fastest timed, non-broken record of `op` at `problem` (baselines included), or nullptr.
const nlohmann::json* fastest_record(const nlohmann::json& results, const std::string& op, const Problem& problem,
                                     const std::string& distribution = "uniform");

// The fastest timed ladder record of `op` at `problem` (baselines excluded), or nullptr.
const nlohmann::json* fastest_ladder_record(const nlohmann::json& results, const std::string& op,
                                            const Problem& problem, const std::string& distribution = "uniform");

double median_ms(const nlohmann::json& record);
double tflops(const nlohmann::json& record);
double gbps(const nlohmann::json& record);

// The experiment table called `name`, or nullptr.
const nlohmann::json* experiment(const nlohmann::json& results, const std::string& name);

// The verdict for a claimed speedup: "holds" when the measured gain (ratio - 1) reaches 80% of the
// claimed gain, "holds partly" when it points the same way (> 1.05) but falls short, else "does
// not hold". Gains, not ratios: 80% of a claimed 1.2x ratio would accept 0.96x, a slowdown.
std::string speedup_verdict(double measured, double claimed);

nlohmann::json verdict(const std::string& id, const std::string& claim, const std::string& source,
                       const std::string& predicted, const std::string& measured, double ratio,
                       const std::string& verdict);

}  // namespace cudalab::harness
