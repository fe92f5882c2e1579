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
// The ceilings as measured beside their datasheet figures.
Table ceilings_table(const harness::Ceilings& ceilings);
// An experiment's own table, values formatted.
Table experiment_table(const nlohmann::json& experiment);
// id, claim, predicted, measured, ratio, verdict.
Table claims_table(const nlohmann::json& claims);

// "1.234 ms", "12.3 us"
std::string format_time_ms(double milliseconds);

}  // namespace cudalab::cli
