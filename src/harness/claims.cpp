#include "harness/claims.hpp"

namespace cudalab::harness {
namespace {

bool matches(const nlohmann::json& r, const std::string& op, const Problem& problem, const std::string& distribution) {
  return r.value("op", "") == op && r.contains("time_ms") && r.value("distribution", "uniform") == distribution &&
         r.contains("problem") && r["problem"].value("key", "") == problem.key();
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

std::string speedup_verdict(double measured, double claimed) {
  if (measured - 1 >= 0.8 * (claimed - 1)) return "holds";
  if (measured > 1.05) return "holds partly: same direction, smaller effect";
  return "does not hold";
}

nlohmann::json verdict(const std::string& id, const std::string& claim, const std::string& source,
                       const std::string& predicted, const std::string& measured, double ratio,
                       const std::string& verdict) {
  return {{"id", id},       {"claim", claim},    {"source", source}, {"predicted", predicted}, {"measured", measured},
          {"ratio", ratio}, {"verdict", verdict}};
}

}  // namespace cudalab::harness
