// Text and markdown tables for the CLI and for generated docs, from records and experiments.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/results.hpp"

namespace cudalab::cli {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string text() const;      // aligned columns for a terminal
  std::string markdown() const;  // GitHub-flavoured markdown
};

// One row per record: variant, technique, median/min/max time, samples, GB/s, TFLOP/s,
// % of roofline, speedup over the first ladder variant, verified.
Table records_table(const std::vector<harness::Record>& records);
// A configuration: an op at one dtype and one set of parameters, over all its sizes ("scan_i32",
// "scan_i32_exclusive1", "histogram_u16_bins4096": parameters at the op's default are left out of
// the id). The results summary, the rankings and the plots show one of each.
std::string configuration_id(const harness::Record& record);
// The configurations of `records`, in run order.
std::vector<std::string> configurations(const std::vector<harness::Record>& records);
// The problem a configuration is summarised at: its first bench distribution (later ones are
// stress cases) and, within it, the largest size with a timed row.
struct Headline {
  harness::Problem problem;
  std::string distribution;
};
Headline headline_problem(const std::vector<harness::Record>& records, const std::string& configuration);
// The records of one problem, fastest first (untimed ones last, with why): rank, variant, role,
// median, TFLOP/s for compute-bound problems or GB/s, % of roofline, and each row's speed
// against the first baseline's ("vs cublas" 0.9x: 90% of cuBLAS's speed).
Table ranking_table(const std::vector<harness::Record>& records);
// The ceilings as measured beside their datasheet figures.
Table ceilings_table(const harness::Ceilings& ceilings);
// An experiment's own table, values formatted.
Table experiment_table(const nlohmann::json& experiment);
// id, claim, predicted, measured, ratio, verdict.
Table claims_table(const nlohmann::json& claims);

// "1.234 ms", "12.3 us"
std::string format_time_ms(double milliseconds);

}  // namespace cudalab::cli
