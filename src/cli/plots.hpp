// SVG charts for the docs, drawn from a results file (no plotting library needed).
#pragma once

#include <string>
#include <vector>

#include "harness/runner.hpp"

namespace cudalab::cli {

struct Bar {
  std::string label;
  double value = 0;    // GB/s; 0 with a note for a variant that was not timed
  std::string role;    // "ladder", "baseline", "broken": picks the colour
  std::string note;    // right of the bar: "96.1% of roofline", "failed verification", ...
};

// A horizontal bar chart, one bar per variant, with a dashed line at `ceiling` (0: none).
std::string bar_chart_svg(const std::string& title, const std::vector<Bar>& bars, double ceiling,
                          const std::string& ceiling_label);

// The bars for `op` at its largest size and first distribution: effective GB/s of every variant,
// and the memory ceiling for that traffic mix (0 when nothing was timed).
std::vector<Bar> op_bars(const std::vector<harness::Record>& records, const std::string& op, std::int64_t* n,
                         double* ceiling);

}  // namespace cudalab::cli
