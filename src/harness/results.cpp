#include "harness/results.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>

#include "cudalab/error.hpp"
#include "harness/registry.hpp"

namespace cudalab::harness {

void to_json(nlohmann::json& j, const Problem& p) {
  j = {{"dtype", to_string(p.dtype)}, {"dims", p.dims}, {"params", p.params}, {"key", p.key()}};
}

void from_json(const nlohmann::json& j, Problem& p) {
  p = Problem{};
  const std::string dtype = j.value("dtype", "f32");
  if (!parse_dtype(dtype, &p.dtype))
    throw Error(ErrorKind::invalid_argument, "a results record names an unknown dtype '" + dtype + "'", __FILE__,
                __LINE__);
  p.dims = j.value("dims", std::vector<Dim>{});
  p.params = j.value("params", std::vector<Param>{});
}

void to_json(nlohmann::json& j, const Record& r) {
  j = {{"op", r.op},           {"variant", r.variant}, {"technique", r.technique},
       {"role", r.role},       {"problem", r.problem}, {"work", r.work},
       {"outcome", r.outcome}, {"seed", r.seed},       {"distribution", r.distribution}};
  if (r.outcome != Outcome::skipped) j["unit"] = r.unit;
  if (!r.skip_reason.empty()) j["skip_reason"] = r.skip_reason;
  if (r.outcome != Outcome::skipped) j["comparison"] = r.comparison;
  if (r.timed) {
    j["time_ms"] = r.time_ms;
    j["roofline"] = r.roofline_point;
    j["speedup_vs_first"] = r.speedup_vs_first;
  }
}

void from_json(const nlohmann::json& j, Record& r) {
  r = Record{};
  j.at("op").get_to(r.op);
  j.at("variant").get_to(r.variant);
  r.technique = j.value("technique", "");
  r.role = j.value("role", Role::ladder);
  r.problem = j.value("problem", Problem{});
  r.work = j.value("work", Work{});
  r.unit = j.value("unit", ComputeUnit::fp32_cuda_cores);
  r.outcome = j.value("outcome", Outcome::skipped);
  r.seed = j.value("seed", std::uint64_t{0});
  r.distribution = j.value("distribution", "");
  r.skip_reason = j.value("skip_reason", "");
  r.comparison = j.value("comparison", Comparison{});
  r.timed = j.contains("time_ms");
  if (r.timed) {
    j.at("time_ms").get_to(r.time_ms);
    r.roofline_point = j.value("roofline", RooflinePoint{});
    r.speedup_vs_first = j.value("speedup_vs_first", 0.0);
  }
}

std::string gpu_slug(const std::string& gpu_name) {
  std::string slug;
  for (char c : gpu_name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "unknown-gpu" : slug;
}

nlohmann::json make_results(const Provenance& provenance, const Ceilings& ceilings, const std::vector<Record>& records,
                            const nlohmann::json& experiments) {
  nlohmann::json document = {{"schema", kResultsSchema},
                             {"provenance", provenance},
                             {"ceilings", ceilings},
                             {"records", records},
                             {"experiments", experiments.is_null() ? nlohmann::json::array() : experiments}};
  evaluate_claims(document);
  return document;
}

void evaluate_claims(nlohmann::json& results) {
  nlohmann::json claims = nlohmann::json::array();
  for (const ClaimCheck& check : builtin_registry().claims()) {
    nlohmann::json verdict = check.evaluate(results);
    if (!verdict.is_null()) claims.push_back(std::move(verdict));
  }
  results["claims"] = std::move(claims);
}

void write_json_file(const std::string& path, const nlohmann::json& document) {
  const std::filesystem::path target(path);
  std::error_code ignored;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ignored);
  std::ofstream out(target);
  if (!out) throw Error(ErrorKind::invalid_argument, "cannot write " + path, __FILE__, __LINE__);
  out << document.dump(2) << '\n';
  if (!out) throw Error(ErrorKind::invalid_argument, "failed writing " + path, __FILE__, __LINE__);
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::invalid_argument, "cannot read " + path, __FILE__, __LINE__);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::invalid_argument, path + " is not valid JSON: " + e.what(), __FILE__, __LINE__);
  }
}

}  // namespace cudalab::harness
