#include "harness/results.hpp"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

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

namespace {

nlohmann::json number_or_name(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double number_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return 0.0;
  const nlohmann::json& v = j.at(key);
  if (v.is_number()) return v.get<double>();
  if (v.is_string() && v.get<std::string>() == "inf") return std::numeric_limits<double>::infinity();
  if (v.is_string() && v.get<std::string>() == "-inf") return -std::numeric_limits<double>::infinity();
  if (v.is_null() || (v.is_string() && v.get<std::string>() == "nan")) return std::numeric_limits<double>::quiet_NaN();
  throw Error(ErrorKind::invalid_argument, std::string("a results record's comparison holds a non-number ") + key,
              __FILE__, __LINE__);
}

}  // namespace

void to_json(nlohmann::json& j, const Comparison& c) {
  j = {{"count", c.count},
       {"mismatches", c.mismatches},
       {"unwritten", c.unwritten},
       {"non_finite", c.non_finite},
       {"first_mismatch", c.first_mismatch},
       {"first_mismatch_out", number_or_name(c.first_mismatch_out)},
       {"first_mismatch_ref", number_or_name(c.first_mismatch_ref)},
       {"max_abs_error", number_or_name(c.max_abs_error)},
       {"rel_l2_error", number_or_name(c.rel_l2_error)},
       {"tolerance", c.tolerance}};
}

void from_json(const nlohmann::json& j, Comparison& c) {
  c = Comparison{};
  c.count = j.value("count", c.count);
  c.mismatches = j.value("mismatches", c.mismatches);
  c.unwritten = j.value("unwritten", c.unwritten);
  c.non_finite = j.value("non_finite", c.non_finite);
  c.first_mismatch = j.value("first_mismatch", c.first_mismatch);
  c.first_mismatch_out = number_from(j, "first_mismatch_out");
  c.first_mismatch_ref = number_from(j, "first_mismatch_ref");
  c.max_abs_error = number_from(j, "max_abs_error");
  c.rel_l2_error = number_from(j, "rel_l2_error");
  c.tolerance = j.value("tolerance", c.tolerance);
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
  // Written beside the target, then renamed over it: a run stopped mid-write leaves the old file whole.
  const std::filesystem::path partial = target.string() + ".partial";
  {
    std::ofstream out(partial);
    if (!out) throw Error(ErrorKind::invalid_argument, "cannot write " + path, __FILE__, __LINE__);
    out << document.dump(2) << '\n';
    if (!out) throw Error(ErrorKind::invalid_argument, "failed writing " + path, __FILE__, __LINE__);
  }
  std::error_code error;
  std::filesystem::rename(partial, target, error);
  if (error)
    throw Error(ErrorKind::invalid_argument, "cannot write " + path + ": " + error.message(), __FILE__, __LINE__);
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
