#include "cli/plots.hpp"

#include <algorithm>

#include "core/format.hpp"

namespace cudalab::cli {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

const char* colour(const std::string& role) {
  if (role == "baseline") return "#e08a2c";
  if (role == "broken") return "#9a9a9a";
  return "#3b75af";
}

}  // namespace

std::string bar_chart_svg(const std::string& title, const BarChart& chart) {
  const std::vector<Bar>& bars = chart.bars;
  const double ceiling = chart.ceiling;
  constexpr int kLabelWidth = 230, kPlotWidth = 420, kNoteWidth = 190, kRow = 24, kTop = 48, kBottom = 36;
  const int width = kLabelWidth + kPlotWidth + kNoteWidth;
  const int height = kTop + kRow * static_cast<int>(bars.size()) + kBottom;
  double scale_max = ceiling;
  for (const Bar& b : bars) scale_max = std::max(scale_max, b.value);
  scale_max = scale_max > 0 ? scale_max * 1.05 : 1.0;
  auto x_of = [&](double value) { return kLabelWidth + kPlotWidth * value / scale_max; };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
                    std::to_string(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" + escape(title) + "</text>\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = kTop + kRow * static_cast<int>(i);
    svg += "<text x=\"" + std::to_string(kLabelWidth - 6) + "\" y=\"" + std::to_string(y + 15) +
           "\" text-anchor=\"end\">" + escape(b.label) + "</text>\n";
    const double end = x_of(b.value);
    if (b.value > 0)
      svg += "<rect x=\"" + std::to_string(kLabelWidth) + "\" y=\"" + std::to_string(y + 3) + "\" width=\"" +
             format_fixed(end - kLabelWidth, 1) + "\" height=\"" + std::to_string(kRow - 6) + "\" fill=\"" +
             colour(b.role) + "\"/>\n";
    svg += "<text x=\"" + format_fixed(std::max(end, double(kLabelWidth)) + 6, 1) + "\" y=\"" + std::to_string(y + 15) +
           "\">" + escape(b.note) + "</text>\n";
  }
  const int axis_y = kTop + kRow * static_cast<int>(bars.size()) + 4;
  svg += "<line x1=\"" + std::to_string(kLabelWidth) + "\" y1=\"" + std::to_string(axis_y) + "\" x2=\"" +
         std::to_string(kLabelWidth + kPlotWidth) + "\" y2=\"" + std::to_string(axis_y) + "\" stroke=\"black\"/>\n";
  for (int tick = 0; tick <= 4; ++tick) {
    const double value = scale_max * tick / 4;
    svg += "<text x=\"" + format_fixed(x_of(value), 1) + "\" y=\"" + std::to_string(axis_y + 16) +
           "\" text-anchor=\"middle\" fill=\"#555\">" + format_fixed(value, 0) + "</text>\n";
  }
  svg += "<text x=\"" + std::to_string(kLabelWidth + kPlotWidth) + "\" y=\"" + std::to_string(axis_y + 30) +
         "\" text-anchor=\"end\" fill=\"#555\">" + escape(chart.axis_label) + "</text>\n";
  if (ceiling > 0) {
    const double x = x_of(ceiling);
    svg += "<line x1=\"" + format_fixed(x, 1) + "\" y1=\"" + std::to_string(kTop - 6) + "\" x2=\"" + format_fixed(x, 1) +
           "\" y2=\"" + std::to_string(axis_y) + "\" stroke=\"#c0392b\" stroke-dasharray=\"5,4\"/>\n";
    svg += "<text x=\"" + format_fixed(x, 1) + "\" y=\"" + std::to_string(kTop - 10) +
           "\" text-anchor=\"middle\" fill=\"#c0392b\">" + escape(chart.ceiling_label) + "</text>\n";
  }
  return svg + "</svg>\n";
}

BarChart op_chart(const std::vector<harness::Record>& records, const std::string& op) {
  BarChart chart;
  std::string distribution;
  for (const auto& r : records) {
    if (r.op != op) continue;
    if (distribution.empty()) distribution = r.distribution;
    if (r.distribution == distribution && r.problem.n > chart.problem.n) chart.problem = r.problem;
  }
  bool compute_bound = false;
  for (const auto& r : records)
    if (r.op == op && r.problem == chart.problem && r.timed) compute_bound = r.roofline_point.bound == "compute";
  chart.axis_label = compute_bound ? "TFLOP/s" : "effective GB/s (minimum bytes / time)";
  for (const auto& r : records) {
    if (r.op != op || r.problem != chart.problem || r.distribution != distribution) continue;
    Bar b;
    b.label = r.variant;
    b.role = harness::to_string(r.role);
    if (r.timed) {
      b.value = compute_bound ? r.roofline_point.tflops : r.roofline_point.gbps;
      b.note = format_fixed(b.value, compute_bound ? 1 : 0) + (compute_bound ? " TFLOP/s, " : " GB/s, ") +
               format_fixed(100 * r.roofline_point.fraction, 1) + "% of roofline";
      chart.ceiling = compute_bound ? r.roofline_point.compute_ceiling_tflops : r.roofline_point.memory_ceiling_gbps;
    } else if (r.outcome == harness::Outcome::failed) {
      b.note = "failed verification: no time";
    } else {
      b.note = "skipped";
    }
    chart.bars.push_back(std::move(b));
  }
  chart.ceiling_label = compute_bound ? "FP32 peak " + format_fixed(chart.ceiling, 1) + " TFLOP/s"
                                      : "memory roofline " + format_fixed(chart.ceiling, 0) + " GB/s";
  return chart;
}

}  // namespace cudalab::cli
