// SVG charts for the docs, drawn from a results file (no plotting library needed).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/runner.hpp"

namespace cudalab::cli {

struct Bar {
  std::string label;
  double value = 0;  // in the chart's unit; 0 with a note for a variant that was not timed
  std::string role;  // "ladder", "baseline", "broken": picks the colour
  std::string note;  // right of the bar: "96.1% of roofline", "failed verification", ...
};

struct BarChart {
  harness::Problem problem;                                           // the size charted
  harness::ComputeUnit unit = harness::ComputeUnit::fp32_cuda_cores;  // whose peak a compute-bound chart shows
  std::string axis_label;  // "effective GB/s (minimum bytes / time)" or "TFLOP/s"
  double ceiling = 0;      // dashed line; 0: none
  std::string ceiling_label;
  std::vector<Bar> bars;
};

// A horizontal bar chart, one bar per variant, with a dashed line at the ceiling.
std::string bar_chart_svg(const std::string& title, const BarChart& chart);

// The chart of `op` at its largest size and first distribution: every variant's effective GB/s
// against the memory ceiling for that traffic mix, or, where the roofline calls the op compute
// bound, its TFLOP/s against the compute ceiling.
BarChart op_chart(const std::vector<harness::Record>& records, const std::string& configuration);

// A chart of an experiment's table, as one of its "plots" entries describes it: a bar chart when
// the entry says "kind": "bar", else a line chart.
std::string experiment_chart_svg(const nlohmann::json& experiment, const nlohmann::json& plot);

// A bar chart of an experiment's table, one bar per row:
//   {"kind": "bar", "title", "label": column or [columns] (joined by spaces), "value": column,
//    "value_label": str (the axis; default the column's name)}
// A row whose value is not a number gets an empty bar noted "-".
// Throws Error{invalid_argument} when the spec names a column the table lacks.
std::string experiment_bar_chart_svg(const nlohmann::json& experiment, const nlohmann::json& plot);

// A line chart of an experiment's table, as its "plots" entry describes it:
//   {"title", "x": column, "y": column, "series": column (optional: one line per distinct value),
//    "x_log", "y_log": bool, "y_label": str}
// Rows whose x or y cell is not a positive number (on a log axis) or not a number are left out.
// Throws Error{invalid_argument} when the spec names a column the table lacks.
std::string line_chart_svg(const nlohmann::json& experiment, const nlohmann::json& plot);

// Writes `svg` to `path` and, where rsvg-convert is on PATH, the same chart as PNG beside it.
// Returns the files written.
std::vector<std::string> write_chart(const std::string& svg, const std::string& path_without_extension);

}  // namespace cudalab::cli
