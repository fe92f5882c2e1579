#include "harness/claims.hpp"

#include <algorithm>
#include <vector>

#include "cudalab/error.hpp"
#include "harness/claim_catalog.hpp"
#include "harness/registry.hpp"
#include "harness/results.hpp"

namespace cudalab::harness {
namespace {

// Whether a record's problem is `problem`. A record from a build that predates one of the op's
// parameters ran it at the parameter's default (gemm's transpose_a, say): its key gains the
// missing parameters at their defaults, in the op's order, before the comparison.
bool same_problem(const nlohmann::json& recorded, const std::string& op, const Problem& problem) {
  if (recorded.value("key", "") == problem.key()) return true;
  const Op* declared = builtin_registry().find_op(op);
  if (declared == nullptr) return false;
  Problem upgraded = recorded.get<Problem>();
  for (const Param& p : upgraded.params) {
    const bool still_declared =
        std::any_of(declared->params.begin(), declared->params.end(), [&](const Param& d) { return d.name == p.name; });
    if (!still_declared) return false;
  }
  std::vector<Param> params;
  for (const Param& d : declared->params)
    params.push_back({d.name, upgraded.has_param(d.name) ? upgraded.param(d.name) : d.value});
  upgraded.params = params;
  return upgraded.key() == problem.key();
}

bool matches(const nlohmann::json& r, const std::string& op, const Problem& problem, const std::string& distribution) {
  return r.value("op", "") == op && r.contains("time_ms") && r.value("distribution", "uniform") == distribution &&
         r.contains("problem") && same_problem(r["problem"], op, problem);
}

const nlohmann::json* fastest(const nlohmann::json& results, const std::string& op, const Problem& problem,
                              const std::string& distribution, bool baselines) {
  if (!results.contains("records")) return nullptr;
  const nlohmann::json* best = nullptr;
  for (const auto& r : results["records"]) {
    const std::string role = r.value("role", "");
    if (!matches(r, op, problem, distribution) || role == "broken" || (!baselines && role == "baseline")) continue;
    if (best == nullptr || median_ms(r) < median_ms(*best)) best = &r;
  }
  return best;
}

}  // namespace

const nlohmann::json* timed_record(const nlohmann::json& results, const std::string& op, const std::string& variant,
                                   const Problem& problem, const std::string& distribution) {
  if (!results.contains("records")) return nullptr;
  for (const auto& r : results["records"])
    if (matches(r, op, problem, distribution) && r.value("variant", "") == variant) return &r;
  return nullptr;
}

const nlohmann::json* fastest_record(const nlohmann::json& results, const std::string& op, const Problem& problem,
                                     const std::string& distribution) {
  return fastest(results, op, problem, distribution, true);
}

const nlohmann::json* fastest_ladder_record(const nlohmann::json& results, const std::string& op,
                                            const Problem& problem, const std::string& distribution) {
  return fastest(results, op, problem, distribution, false);
}

double median_ms(const nlohmann::json& record) { return record.at("time_ms").value("median", 0.0); }
double tflops(const nlohmann::json& record) { return record.at("roofline").value("tflops", 0.0); }
double gbps(const nlohmann::json& record) { return record.at("roofline").value("gbps", 0.0); }

const nlohmann::json* experiment(const nlohmann::json& results, const std::string& name) {
  if (!results.contains("experiments")) return nullptr;
  for (const auto& e : results["experiments"])
    if (e.value("name", "") == name) return &e;
  return nullptr;
}

int column_index(const nlohmann::json& table, const std::string& column) {
  if (!table.contains("columns")) return -1;
  const auto& columns = table["columns"];
  for (std::size_t k = 0; k < columns.size(); ++k)
    if (columns[k] == column) return static_cast<int>(k);
  return -1;
}

nlohmann::json claim_verdict(const std::string& id, const std::string& predicted, const std::string& measured,
                             const std::vector<PartVerdict>& parts) {
  const ClaimText* text = find_claim_text(id);
  CUDALAB_REQUIRE(text != nullptr, "claim " + id + " is not in the claims catalog");
  CUDALAB_REQUIRE(!parts.empty(), "claim " + id + " is judged with no parts");
  nlohmann::json judged_parts = nlohmann::json::array();
  for (const PartVerdict& p : parts) judged_parts.push_back(to_json(p));
  return {{"id", id},
          {"claim", text->claim},
          {"source", std::string("tutorial ") + text->sources},
          {"predicted", predicted},
          {"measured", measured},
          {"parts", judged_parts},
          {"ratio", parts.front().measured},
          {"verdict", verdict_list(parts)}};
}

}  // namespace cudalab::harness
