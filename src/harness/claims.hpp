// Helpers for claim checks: find records in a results document and phrase a verdict. Records are
// found by problem (harness/problem.hpp key) and input distribution; claims are judged on uniform
// inputs unless they say otherwise.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/problem.hpp"
#include "harness/verdict.hpp"

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
// The index of `column` in an experiment table's "columns", or -1 when the table has none such (a
// file written before the column existed).
int column_index(const nlohmann::json& table, const std::string& column);

// A judged claim: {"id", "claim", "source" (from the catalog), "predicted", "measured" (in words,
// naming the variants and the problem), "parts": [each part's verdict], "ratio" (the first part's
// measured value), "verdict" (verdict_list of the parts)}. Throws invalid_argument when `id` is
// not in the catalog or `parts` is empty.
nlohmann::json claim_verdict(const std::string& id, const std::string& predicted, const std::string& measured,
                             const std::vector<PartVerdict>& parts);

}  // namespace cudalab::harness
