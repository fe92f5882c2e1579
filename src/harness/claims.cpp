#include "harness/claims.hpp"

namespace cudalab::harness {
namespace {
bool is_timed(const nlohmann::json& r, const std::string& distribution) {
  return r.contains("time_ms") && r.value("distribution", "uniform") == distribution;
}
}  // namespace

std::int64_t largest_timed_n(const nlohmann::json& results, const std::string& op, const std::string& distribution) {
  std::int64_t largest = 0;
  for (const auto& r : results.value("records", nlohmann::json::array()))
    if (r.value("op", "") == op && is_timed(r, distribution))
      largest = std::max(largest, r["problem"].value("n", std::int64_t{0}));
  return largest;
}

const nlohmann::json* timed_record(const nlohmann::json& results, const std::string& op, const std::string& variant,
                                   std::int64_t n, const std::string& distribution) {
  if (!results.contains("records")) return nullptr;
  for (const auto& r : results["records"])
    if (r.value("op", "") == op && r.value("variant", "") == variant && is_timed(r, distribution) &&
        r["problem"].value("n", std::int64_t{0}) == n)
      return &r;
  return nullptr;
}

const nlohmann::json* fastest_record(const nlohmann::json& results, const std::string& op, std::int64_t n,
                                     const std::string& distribution) {
  if (!results.contains("records")) return nullptr;
  const nlohmann::json* best = nullptr;
  for (const auto& r : results["records"]) {
    if (r.value("op", "") != op || !is_timed(r, distribution) || r.value("role", "") == "broken" ||
        r["problem"].value("n", std::int64_t{0}) != n)
      continue;
    if (best == nullptr || median_ms(r) < median_ms(*best)) best = &r;
  }
  return best;
}

double median_ms(const nlohmann::json& record) { return record.at("time_ms").value("median", 0.0); }

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
