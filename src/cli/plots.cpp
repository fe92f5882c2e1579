#include "cli/plots.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "cli/tables.hpp"
#include "core/format.hpp"
#include "cudalab/error.hpp"

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

// Distinct, colour-blind-friendly line colours (Okabe-Ito), cycled.
const char* series_colour(std::size_t i) {
  static const char* const kColours[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                         "#56b4e9", "#d55e00", "#f0e442", "#000000"};
  return kColours[i % (sizeof(kColours) / sizeof(kColours[0]))];
}

int column_index(const nlohmann::json& experiment, const std::string& name) {
  const auto& columns = experiment.value("columns", nlohmann::json::array());
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].get<std::string>() == name) return static_cast<int>(i);
  throw Error(ErrorKind::invalid_argument,
              "experiment '" + experiment.value("name", "") + "' plots a column it lacks: '" + name + "'", __FILE__,
              __LINE__);
}

// One axis: maps data to pixels over [lo, hi], linearly or by log10, and picks tick values.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double unit(double v) const {
    if (log) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return (v - lo) / (hi - lo);
  }
  std::vector<double> ticks() const {
    std::vector<double> out;
    if (log) {
      for (double t = std::pow(10.0, std::floor(std::log10(lo))); t <= hi * 1.0001; t *= 10)
        if (t >= lo * 0.9999) out.push_back(t);
      if (out.size() < 2) out = {lo, hi};
      return out;
    }
    // Steps of 1, 2 or 5 times a power of ten, about five of them.
    const double raw = (hi - lo) / 5;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw / power < 1.5   ? power
                        : raw / power < 3.5 ? 2 * power
                        : raw / power < 7.5 ? 5 * power
                                            : 10 * power;
    for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(t);
    return out;
  }
};

Axis fit_axis(const std::vector<double>& values, bool log) {
  Axis a;
  a.log = log;
  if (values.empty()) return a;
  a.lo = *std::min_element(values.begin(), values.end());
  a.hi = *std::max_element(values.begin(), values.end());
  if (log) {
    if (a.hi <= a.lo) a.hi = a.lo * 10;
  } else {
    a.lo = std::min(a.lo, 0.0);  // linear axes start at zero, so heights compare honestly
    if (a.hi <= a.lo) a.hi = a.lo + 1;
    a.hi *= 1.05;
  }
  return a;
}

// "0.5", "250", "1e6", "2.5e9": short enough for an axis.
std::string tick_label(double v) {
  const double magnitude = std::fabs(v);
  if (magnitude == 0 || (magnitude >= 1e-2 && magnitude < 1e4)) return format_significant(v, 3);
  const int exponent = static_cast<int>(std::floor(std::log10(magnitude)));
  const double mantissa = v / std::pow(10.0, exponent);
  return (std::fabs(mantissa - 1) < 1e-6 ? "1" : format_significant(mantissa, 2)) + "e" + std::to_string(exponent);
}

}  // namespace

std::string line_chart_svg(const nlohmann::json& experiment, const nlohmann::json& plot) {
  const std::string x_name = plot.value("x", ""), y_name = plot.value("y", ""), series_name = plot.value("series", "");
  const int xi = column_index(experiment, x_name), yi = column_index(experiment, y_name);
  const int si = series_name.empty() ? -1 : column_index(experiment, series_name);
  const bool x_log = plot.value("x_log", false), y_log = plot.value("y_log", false);

  // Series in first-seen order, points in row order.
  std::vector<std::string> names;
  std::map<std::string, std::vector<std::pair<double, double>>> points;
  std::vector<double> xs, ys;
  for (const auto& row : experiment.value("rows", nlohmann::json::array())) {
    const auto& x = row.at(xi);
    const auto& y = row.at(yi);
    if (!x.is_number() || !y.is_number()) continue;
    const double xv = x.get<double>(), yv = y.get<double>();
    if ((x_log && xv <= 0) || (y_log && yv <= 0) || !std::isfinite(xv) || !std::isfinite(yv)) continue;
    std::string name = y_name;
    if (si >= 0) name = row.at(si).is_string() ? row.at(si).get<std::string>() : row.at(si).dump();
    if (points.find(name) == points.end()) names.push_back(name);
    points[name].emplace_back(xv, yv);
    xs.push_back(xv);
    ys.push_back(yv);
  }
  const Axis ax = fit_axis(xs, x_log), ay = fit_axis(ys, y_log);

  constexpr int kLeft = 80, kPlotWidth = 560, kTop = 44, kPlotHeight = 300, kLegendWidth = 220, kBottom = 50;
  const std::string title = plot.value("title", experiment.value("name", ""));
  // Wide enough for the title at about 8.5 px per bold 14 px character.
  const int width = std::max(kLeft + kPlotWidth + kLegendWidth, 20 + static_cast<int>(8.5 * title.size()));
  const int height = kTop + kPlotHeight + kBottom;
  auto px = [&](double v) { return kLeft + kPlotWidth * ax.unit(v); };
  auto py = [&](double v) { return kTop + kPlotHeight * (1 - ay.unit(v)); };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
                    std::to_string(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" + escape(title) + "</text>\n";
  svg += "<rect x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(kTop) + "\" width=\"" +
         std::to_string(kPlotWidth) + "\" height=\"" + std::to_string(kPlotHeight) +
         "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (double t : ax.ticks()) {
    svg += "<line x1=\"" + format_fixed(px(t), 1) + "\" y1=\"" + std::to_string(kTop) + "\" x2=\"" +
           format_fixed(px(t), 1) + "\" y2=\"" + std::to_string(kTop + kPlotHeight) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + format_fixed(px(t), 1) + "\" y=\"" + std::to_string(kTop + kPlotHeight + 16) +
           "\" text-anchor=\"middle\" fill=\"#555\">" + escape(tick_label(t)) + "</text>\n";
  }
  for (double t : ay.ticks()) {
    svg += "<line x1=\"" + std::to_string(kLeft) + "\" y1=\"" + format_fixed(py(t), 1) + "\" x2=\"" +
           std::to_string(kLeft + kPlotWidth) + "\" y2=\"" + format_fixed(py(t), 1) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + std::to_string(kLeft - 6) + "\" y=\"" + format_fixed(py(t) + 4, 1) +
           "\" text-anchor=\"end\" fill=\"#555\">" + escape(tick_label(t)) + "</text>\n";
  }
  svg += "<text x=\"" + std::to_string(kLeft + kPlotWidth / 2) + "\" y=\"" + std::to_string(height - 10) +
         "\" text-anchor=\"middle\">" + escape(x_name + (x_log ? " (log scale)" : "")) + "</text>\n";
  svg += "<text transform=\"translate(16," + std::to_string(kTop + kPlotHeight / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" +
         escape(plot.value("y_label", y_name) + (y_log ? " (log scale)" : "")) + "</text>\n";
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& line = points[names[i]];
    // A line joins a sweep; a row whose x does not advance (an extra configuration at an x the
    // sweep already has) starts a new segment, so a lone point is drawn as a marker only.
    std::string path;
    double previous_x = 0;
    auto flush = [&]() {
      if (path.find(' ') != std::string::npos)
        svg += "<polyline points=\"" + path + "\" fill=\"none\" stroke=\"" + series_colour(i) +
               "\" stroke-width=\"2\"/>\n";
      path.clear();
    };
    for (const auto& [x, y] : line) {
      if (!path.empty() && x <= previous_x) flush();
      path += (path.empty() ? "" : " ") + format_fixed(px(x), 1) + "," + format_fixed(py(y), 1);
      previous_x = x;
    }
    flush();
    for (const auto& [x, y] : line)
      svg += "<circle cx=\"" + format_fixed(px(x), 1) + "\" cy=\"" + format_fixed(py(y), 1) + "\" r=\"3\" fill=\"" +
             series_colour(i) + "\"/>\n";
    const int ly = kTop + 8 + 18 * static_cast<int>(i);
    svg += "<line x1=\"" + std::to_string(kLeft + kPlotWidth + 14) + "\" y1=\"" + std::to_string(ly) + "\" x2=\"" +
           std::to_string(kLeft + kPlotWidth + 34) + "\" y2=\"" + std::to_string(ly) + "\" stroke=\"" +
           series_colour(i) + "\" stroke-width=\"2\"/>\n";
    svg += "<text x=\"" + std::to_string(kLeft + kPlotWidth + 40) + "\" y=\"" + std::to_string(ly + 4) + "\">" +
           escape(names[i]) + "</text>\n";
  }
  if (names.empty())
    svg += "<text x=\"" + std::to_string(kLeft + 20) + "\" y=\"" + std::to_string(kTop + 30) +
           "\">no numeric rows to plot</text>\n";
  return svg + "</svg>\n";
}

std::vector<std::string> write_chart(const std::string& svg, const std::string& path_without_extension) {
  const std::string svg_path = path_without_extension + ".svg";
  {
    std::ofstream out(svg_path);
    out << svg;
    if (!out) throw Error(ErrorKind::invalid_argument, "cannot write " + svg_path, __FILE__, __LINE__);
  }
  std::vector<std::string> written = {svg_path};
  // PNG for pages and viewers that want a raster image; rsvg-convert draws SVG faithfully and
  // scripts/bootstrap installs it (librsvg2-bin).
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") == 0) {
    const std::string png_path = path_without_extension + ".png";
    const std::string command = "rsvg-convert --format=png --output='" + png_path + "' '" + svg_path + "'";
    if (std::system(command.c_str()) != 0)
      throw Error(ErrorKind::invalid_argument, "rsvg-convert could not write " + png_path, __FILE__, __LINE__);
    written.push_back(png_path);
  }
  return written;
}

std::string bar_chart_svg(const std::string& title, const BarChart& chart) {
  const std::vector<Bar>& bars = chart.bars;
  const double ceiling = chart.ceiling;
  constexpr int kPlotWidth = 420, kNoteWidth = 190, kRow = 24, kTop = 48, kBottom = 36;
  // Room for the longest label at about 7 px per 12 px character.
  std::size_t longest = 0;
  for (const Bar& b : bars) longest = std::max(longest, b.label.size());
  const int label_width = std::max(230, 16 + static_cast<int>(7 * longest));
  const int width = label_width + kPlotWidth + kNoteWidth;
  const int height = kTop + kRow * static_cast<int>(bars.size()) + kBottom;
  double scale_max = ceiling;
  for (const Bar& b : bars) scale_max = std::max(scale_max, b.value);
  scale_max = scale_max > 0 ? scale_max * 1.05 : 1.0;
  auto x_of = [&](double value) { return label_width + kPlotWidth * value / scale_max; };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
                    std::to_string(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" + escape(title) + "</text>\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = kTop + kRow * static_cast<int>(i);
    svg += "<text x=\"" + std::to_string(label_width - 6) + "\" y=\"" + std::to_string(y + 15) +
           "\" text-anchor=\"end\">" + escape(b.label) + "</text>\n";
    const double end = x_of(b.value);
    if (b.value > 0)
      svg += "<rect x=\"" + std::to_string(label_width) + "\" y=\"" + std::to_string(y + 3) + "\" width=\"" +
             format_fixed(end - label_width, 1) + "\" height=\"" + std::to_string(kRow - 6) + "\" fill=\"" +
             colour(b.role) + "\"/>\n";
    svg += "<text x=\"" + format_fixed(std::max(end, double(label_width)) + 6, 1) + "\" y=\"" + std::to_string(y + 15) +
           "\">" + escape(b.note) + "</text>\n";
  }
  const int axis_y = kTop + kRow * static_cast<int>(bars.size()) + 4;
  svg += "<line x1=\"" + std::to_string(label_width) + "\" y1=\"" + std::to_string(axis_y) + "\" x2=\"" +
         std::to_string(label_width + kPlotWidth) + "\" y2=\"" + std::to_string(axis_y) + "\" stroke=\"black\"/>\n";
  for (int tick = 0; tick <= 4; ++tick) {
    const double value = scale_max * tick / 4;
    svg += "<text x=\"" + format_fixed(x_of(value), 1) + "\" y=\"" + std::to_string(axis_y + 16) +
           "\" text-anchor=\"middle\" fill=\"#555\">" +
           (scale_max >= 100 ? format_fixed(value, 0) : tick_label(value)) + "</text>\n";
  }
  svg += "<text x=\"" + std::to_string(label_width + kPlotWidth) + "\" y=\"" + std::to_string(axis_y + 30) +
         "\" text-anchor=\"end\" fill=\"#555\">" + escape(chart.axis_label) + "</text>\n";
  if (ceiling > 0) {
    const double x = x_of(ceiling);
    svg += "<line x1=\"" + format_fixed(x, 1) + "\" y1=\"" + std::to_string(kTop - 6) + "\" x2=\"" +
           format_fixed(x, 1) + "\" y2=\"" + std::to_string(axis_y) +
           "\" stroke=\"#c0392b\" stroke-dasharray=\"5,4\"/>\n";
    svg += "<text x=\"" + format_fixed(x, 1) + "\" y=\"" + std::to_string(kTop - 10) +
           "\" text-anchor=\"middle\" fill=\"#c0392b\">" + escape(chart.ceiling_label) + "</text>\n";
  }
  return svg + "</svg>\n";
}

std::string experiment_bar_chart_svg(const nlohmann::json& experiment, const nlohmann::json& plot) {
  std::vector<int> label_columns;
  const nlohmann::json label = plot.value("label", nlohmann::json::array());
  for (const auto& name : label.is_array() ? label : nlohmann::json::array({label}))
    label_columns.push_back(column_index(experiment, name.get<std::string>()));
  const std::string value_name = plot.value("value", "");
  const int vi = column_index(experiment, value_name);
  BarChart chart;
  chart.axis_label = plot.value("value_label", value_name);
  for (const auto& row : experiment.value("rows", nlohmann::json::array())) {
    Bar b;
    for (int c : label_columns) {
      const auto& cell = row.at(c);
      b.label += (b.label.empty() ? "" : " ") + (cell.is_string() ? cell.get<std::string>() : cell.dump());
    }
    b.role = "ladder";
    const auto& value = row.at(vi);
    if (value.is_number() && std::isfinite(value.get<double>())) {
      b.value = value.get<double>();
      b.note = std::fabs(b.value) >= 100 ? format_fixed(b.value, 0) : format_significant(b.value, 3);
    } else {
      b.note = "-";
    }
    chart.bars.push_back(std::move(b));
  }
  return bar_chart_svg(plot.value("title", experiment.value("name", "")), chart);
}

std::string experiment_chart_svg(const nlohmann::json& experiment, const nlohmann::json& plot) {
  return plot.value("kind", "line") == "bar" ? experiment_bar_chart_svg(experiment, plot)
                                             : line_chart_svg(experiment, plot);
}

BarChart op_chart(const std::vector<harness::Record>& records, const std::string& configuration) {
  BarChart chart;
  const Headline headline = headline_problem(records, configuration);
  const std::string& distribution = headline.distribution;
  chart.problem = headline.problem;
  bool compute_bound = false;
  for (const auto& r : records)
    if (r.problem == chart.problem && r.timed && configuration_id(r) == configuration)
      compute_bound = r.roofline_point.bound == "compute";
  chart.axis_label = compute_bound ? "TFLOP/s" : "effective GB/s (minimum bytes / time)";
  for (const auto& r : records) {
    if (configuration_id(r) != configuration || r.problem != chart.problem || r.distribution != distribution) continue;
    Bar b;
    b.label = r.variant;
    b.role = harness::to_string(r.role);
    if (r.timed) {
      b.value = compute_bound ? r.roofline_point.tflops : r.roofline_point.gbps;
      b.note = format_fixed(b.value, compute_bound ? 1 : 0) + (compute_bound ? " TFLOP/s, " : " GB/s, ") +
               format_fixed(100 * r.roofline_point.fraction, 1) + "% of roofline";
      // The ceiling line is the ladder's (a different-precision baseline has its own ceiling).
      if (chart.ceiling == 0 && r.role == harness::Role::ladder) {
        chart.ceiling = compute_bound ? r.roofline_point.compute_ceiling_tflops : r.roofline_point.memory_ceiling_gbps;
        chart.unit = r.unit;
      }
    } else if (r.outcome == harness::Outcome::failed) {
      b.note = "failed verification: no time";
    } else {
      b.note = "skipped";
    }
    chart.bars.push_back(std::move(b));
  }
  chart.ceiling_label = compute_bound ? std::string(harness::to_string(chart.unit)) + " peak " +
                                            format_fixed(chart.ceiling, 1) + " TFLOP/s"
                                      : "memory roofline " + format_fixed(chart.ceiling, 0) + " GB/s";
  return chart;
}

}  // namespace cudalab::cli
