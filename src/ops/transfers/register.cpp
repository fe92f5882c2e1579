// Registry entries for the transfers page: the transfer, managed-memory, stream, peer and all-reduce experiments,
// the settings they share, and the claims their tables answer (C04, C29, C31, C36, C37).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/transfers/experiments.hpp"

namespace cudalab::transfers {

ExperimentScale experiment_scale() {
  ExperimentScale scale;
  const char* small = std::getenv("CUDALAB_TRANSFERS_SMALL");
  if (small != nullptr && std::string(small) == "1") {
    scale.small = true;
    scale.largest_transfer_bytes = std::size_t{1} << 20;
    scale.managed_bytes = {std::size_t{1} << 20};
    scale.pipeline_elements = std::int64_t{1} << 20;
  }
  return scale;
}

harness::TimingOptions copy_timing(const ExperimentScale& scale, int min_samples) {
  harness::TimingOptions options;
  options.warmup_launches = 1;
  options.cold = false;
  options.stopping.min_samples = scale.small ? 1 : min_samples;
  options.stopping.max_samples = scale.small ? 2 : 200;
  options.stopping.target_stdrel = 0.02;
  options.stopping.budget_seconds = scale.small ? 0.01 : 0.1;
  return options;
}

nlohmann::json copy_rate_plot(const std::string& title, nlohmann::json predicted) {
  return nlohmann::json::array({{{"title", title},
                                 {"x", "bytes"},
                                 {"y", "gbps"},
                                 {"series", "path"},
                                 {"x_log", true},
                                 {"y_log", false},
                                 {"y_label", "GB/s"},
                                 {"predicted", std::move(predicted)}}});
}

CurrentDevice::CurrentDevice(int device) {
  CUDALAB_CUDA_CHECK(cudaGetDevice(&previous_));
  CUDALAB_CUDA_CHECK(cudaSetDevice(device));
}

CurrentDevice::~CurrentDevice() { cudaSetDevice(previous_); }

std::size_t free_device_bytes() {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDALAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

namespace {

using harness::column_index;
using harness::experiment;
using harness::judge_range;
using harness::judge_ratio;
using harness::PartVerdict;

// "Near" an explicit copy: within 20% of its speed either way. "Slower" with no number: at least
// that band's edge, judged as a ratio (a larger slowdown is beyond the claim and holds).
constexpr double kNearLow = 0.8;
constexpr double kNearHigh = 1.25;
constexpr double kSlower = 1.25;

bool has_column(const nlohmann::json& table, const std::string& column) { return column_index(table, column) >= 0; }

double cell(const nlohmann::json& table, const nlohmann::json& row, const std::string& column) {
  const int k = column_index(table, column);
  if (k < 0) throw Error(ErrorKind::invalid_argument, "results: no column '" + column + "'", __FILE__, __LINE__);
  return row[k].get<double>();
}

// C04: pinned against pageable host memory at the largest size measured, host to device (the claim
// names no direction; device to host is quoted). Two ratio parts: the 2x and the other page's 4x.
nlohmann::json claim_c04(const nlohmann::json& results) {
  const auto* table = experiment(results, "transfers");
  if (table == nullptr) return nullptr;
  double largest = 0;
  for (const auto& row : (*table)["rows"]) largest = std::max(largest, cell(*table, row, "bytes"));
  double pinned[2] = {}, pageable[2] = {};  // [H2D, D2H]
  for (const auto& row : (*table)["rows"]) {
    if (cell(*table, row, "bytes") != largest || (row[2] != "H2D" && row[2] != "D2H")) continue;
    const int direction = row[2] == "H2D" ? 0 : 1;
    if (row[1] == "pinned") pinned[direction] = cell(*table, row, "gbps");
    if (row[1] == "pageable") pageable[direction] = cell(*table, row, "gbps");
  }
  if (pinned[0] <= 0 || pageable[0] <= 0) return nullptr;
  const double ratio = pinned[0] / pageable[0];
  std::string measured = "at " + format_bytes(largest) + ", H2D: pinned " + format_fixed(pinned[0], 1) +
                         " GB/s, pageable " + format_fixed(pageable[0], 1) + " GB/s (" + format_fixed(ratio, 2) + "x)";
  if (pinned[1] > 0 && pageable[1] > 0)
    measured += "; D2H: pinned " + format_fixed(pinned[1], 1) + ", pageable " + format_fixed(pageable[1], 1) + " (" +
                format_fixed(pinned[1] / pageable[1], 2) + "x)";
  return harness::claim_verdict("C04", "pinned / pageable H2D rate = 2 (12 vs 6 GB/s), or 4 (12 vs 3 GB/s)", measured,
                                {judge_ratio("H2D: pinned ~2x pageable", 2.0, ratio),
                                 judge_ratio("H2D: pinned 4x pageable (another page)", 4.0, ratio)});
}

// C29, four parts. "24 to 10 ms (2.4x)" and "depth-first 1.5x better than breadth-first" at the
// tutorial's 3 streams (the stream-count sweep's row nearest to it); "3-4x" against the best
// multi-stream row of any kind; "2-8 streams optimal" against the stream count of the fastest row
// of the depth- and breadth-first sweep.
nlohmann::json claim_c29(const nlohmann::json& results) {
  constexpr int kTutorialStreams = 3;
  const auto* table = experiment(results, "streams_pipeline");
  // Files from before the duplex bound was measured are not judged.
  if (table == nullptr || !has_column(*table, "pct_of_duplex_bound")) return nullptr;
  struct SweepRow {
    int streams;
    double depth_ms = 0, breadth_ms = 0, depth_speedup = 0;
  };
  std::vector<SweepRow> sweep;
  double best_speedup = 0, sequential_ms = 0, ideal_ms = 0, fastest_ms = 0;
  std::string best_config;
  int fastest_streams = 0;
  for (const auto& row : (*table)["rows"]) {
    const std::string config = row[0], order = row[1];
    const int streams = static_cast<int>(cell(*table, row, "streams"));
    const double time = cell(*table, row, "time_ms"), speedup = cell(*table, row, "speedup_vs_sequential");
    if (config.rfind("sequential", 0) == 0) {
      sequential_ms = time;
      ideal_ms = cell(*table, row, "ideal_ms");
    }
    if (streams >= 2 && speedup > best_speedup) {
      best_speedup = speedup;
      best_config = config;
    }
    // The stream-count sweep's rows are named "<streams> streams, <order>".
    if (config != std::to_string(streams) + " streams, " + order) continue;
    if (order != "depth-first" && order != "breadth-first") continue;
    auto it = std::find_if(sweep.begin(), sweep.end(), [&](const SweepRow& s) { return s.streams == streams; });
    if (it == sweep.end()) it = sweep.insert(sweep.end(), SweepRow{streams});
    if (order == "depth-first") {
      it->depth_ms = time;
      it->depth_speedup = speedup;
    } else {
      it->breadth_ms = time;
    }
    if (fastest_ms == 0 || time < fastest_ms) {
      fastest_ms = time;
      fastest_streams = streams;
    }
  }
  const SweepRow* nearest = nullptr;
  std::string order_ratios;
  for (const SweepRow& s : sweep) {
    if (s.depth_ms <= 0 || s.breadth_ms <= 0 || s.streams < 2) continue;
    order_ratios += (order_ratios.empty() ? "" : ", ") + std::to_string(s.streams) + ": " +
                    format_fixed(s.breadth_ms / s.depth_ms, 2);
    if (nearest == nullptr || std::abs(s.streams - kTutorialStreams) < std::abs(nearest->streams - kTutorialStreams))
      nearest = &s;
  }
  if (nearest == nullptr || best_speedup <= 0 || fastest_streams <= 0) return nullptr;
  const std::string at = std::to_string(nearest->streams) + " streams";
  std::string measured = "depth-first over sequential at " + at + " " + format_fixed(nearest->depth_speedup, 2) +
                         "x; best multi-stream row " + format_fixed(best_speedup, 2) + "x (" + best_config + ")";
  if (sequential_ms > 0 && ideal_ms > 0)
    measured += ", where equal stages bound any overlap at " + format_fixed(sequential_ms / ideal_ms, 2) + "x";
  measured += "; breadth-first time over depth-first at equal streams (" + order_ratios + "); fastest sweep row at " +
              std::to_string(fastest_streams) + " streams";
  return harness::claim_verdict(
      "C29",
      "speedup over sequential 2.4x (24 -> 10 ms, 3 streams) and 3-4x; breadth-first / depth-first time 1.5; the "
      "fastest stream count in 2-8",
      measured,
      {judge_ratio("24 -> 10 ms (2.4x), " + at, 2.4, nearest->depth_speedup),
       judge_range("\"3-4x\", best multi-stream row", 3.0, 4.0, best_speedup),
       judge_ratio("depth-first 1.5x better than breadth-first, " + at, 1.5, nearest->breadth_ms / nearest->depth_ms),
       judge_range("2-8 streams optimal", 2.0, 8.0, fastest_streams)});
}

// C31: managed memory at the largest size measured, each scenario's speed as a fraction of the
// explicit pinned copy's (explicit_over_this). Parts: no hint slower (a ratio of times, at least
// 1.25x), then prefetch and each advice near the explicit copy (a range, 0.8-1.25), the
// read-mostly advice included. A scenario this device could not run is named, not judged.
nlohmann::json claim_c31(const nlohmann::json& results) {
  const auto* table = experiment(results, "managed_memory");
  if (table == nullptr || (*table)["rows"].empty() || !has_column(*table, "explicit_over_this")) return nullptr;
  const int scenario = column_index(*table, "scenario");
  if (scenario < 0) return nullptr;
  double largest = 0;
  for (const auto& row : (*table)["rows"]) largest = std::max(largest, cell(*table, row, "mib"));
  auto relative = [&](const std::string& name) {
    for (const auto& row : (*table)["rows"])
      if (cell(*table, row, "mib") == largest && row[scenario] == name) return cell(*table, row, "explicit_over_this");
    return 0.0;
  };
  const double no_hint = relative("managed, no hint");
  if (no_hint <= 0) return nullptr;
  std::vector<PartVerdict> parts = {judge_ratio("no hint: slower than the explicit copy", kSlower, 1 / no_hint)};
  std::string measured = "at " + format_fixed(largest, 0) + " MiB, speed over the explicit pinned copy's: no hint " +
                         format_fixed(no_hint, 2);
  const std::pair<const char*, const char*> near[3] = {
      {"managed, prefetch", "prefetch"},
      {"managed, advise preferred host + accessed by GPU", "advice preferred location host + accessed by GPU"},
      {"managed, advise read-mostly", "advice read-mostly"}};
  for (const auto& [name, label] : near) {
    const double value = relative(name);
    measured += std::string(", ") + label + " " + (value > 0 ? format_fixed(value, 2) : "not measured on this device");
    if (value > 0)
      parts.push_back(judge_range(std::string(label) + ": near the explicit copy", kNearLow, kNearHigh, value));
  }
  return harness::claim_verdict("C31",
                                "no hint >= 1.25x slower than an explicit copy; prefetch and each advice within "
                                "0.8-1.25x of its speed",
                                measured, parts);
}

// peer_transfers' rows of `path` at the table's largest size (the 4-byte latency rows aside).
std::vector<nlohmann::json> peer_rows(const nlohmann::json& table, const std::string& path) {
  double largest = 0;
  for (const auto& row : table["rows"]) largest = std::max(largest, cell(table, row, "bytes"));
  std::vector<nlohmann::json> rows;
  for (const auto& row : table["rows"])
    if (row[column_index(table, "path")] == path && cell(table, row, "bytes") == largest) rows.push_back(row);
  return rows;
}

// C36: "NVLink 4.0: 900 GB/s bidirectional bandwidth" (the H100). One range part: the fastest
// pair's cudaMemcpyPeerAsync both ways at once over a link NVML calls NVLink, near the stated 900
// (0.8-1.25x of it, the "near" band of the other single-figure claims).
nlohmann::json claim_c36(const nlohmann::json& results) {
  const auto* table = experiment(results, "peer_transfers");
  if (table == nullptr) return nullptr;
  double best = 0;
  std::string pair;
  for (const auto& row : peer_rows(*table, "memcpy_peer_both_ways"))
    if (row[column_index(*table, "link")] == "NVLink" && cell(*table, row, "gbps") > best) {
      best = cell(*table, row, "gbps");
      pair = row[0];
    }
  if (best <= 0) return nullptr;
  return harness::claim_verdict(
      "C36", "900 GB/s both ways at once between two GPUs over NVLink 4.0 (within 0.8-1.25x)",
      "cudaMemcpyPeerAsync both ways at once, " + pair + ": " + format_fixed(best, 1) + " GB/s",
      {judge_range("both ways over NVLink: near 900 GB/s", 900 * kNearLow, 900 * kNearHigh, best)});
}

// C37: UVA is what makes peer-to-peer transfers between GPUs possible, bypassing host memory. The
// claim states no speed; taken as faster than staging through the host by at least 1.25x, the edge
// of the "near" band, as the other claims of a gain with no number are. Two ratio parts over the pair whose peer copy
// is fastest: its cudaMemcpyPeerAsync and its SM pull (a kernel dereferencing the peer's pointer) over its host-staged
// copy.
nlohmann::json claim_c37(const nlohmann::json& results) {
  const auto* table = experiment(results, "peer_transfers");
  if (table == nullptr) return nullptr;
  const auto rate_of = [&](const std::string& path, const std::string& pair) {
    for (const auto& row : peer_rows(*table, path))
      if (row[0] == pair) return cell(*table, row, "gbps");
    return 0.0;
  };
  double peer = 0;
  std::string pair;
  for (const auto& row : peer_rows(*table, "memcpy_peer"))
    if (cell(*table, row, "gbps") > peer) {
      peer = cell(*table, row, "gbps");
      pair = row[0];
    }
  const double staged = rate_of("host_staged", pair), pull = rate_of("sm_pull", pair);
  if (peer <= 0 || staged <= 0) return nullptr;
  std::vector<PartVerdict> parts = {
      judge_ratio("cudaMemcpyPeerAsync over host staging: faster", kSlower, peer / staged)};
  std::string measured = pair + ": cudaMemcpyPeerAsync " + format_fixed(peer, 1) + " GB/s, host-staged " +
                         format_fixed(staged, 1) + " (" + format_fixed(peer / staged, 2) + "x)";
  if (pull > 0) {
    parts.push_back(judge_ratio("SM pull over peer access over host staging: faster", kSlower, pull / staged));
    measured += ", SM pull " + format_fixed(pull, 1) + " (" + format_fixed(pull / staged, 2) + "x)";
  } else {
    measured += "; no peer access: SM pull not measured";
  }
  return harness::claim_verdict("C37", "direct peer-to-peer faster than staging through host memory (>= 1.25x)",
                                measured, parts);
}

}  // namespace
}  // namespace cudalab::transfers

namespace cudalab::harness {

void register_transfers(Registry& registry) {
  registry.add(transfers::transfers_experiment());
  registry.add(transfers::managed_memory_experiment());
  registry.add(transfers::streams_pipeline_experiment());
  registry.add(transfers::streams_chunk_size_experiment());
  registry.add(transfers::streams_concurrency_experiment());
  registry.add(transfers::peer_transfers_experiment());
  registry.add(transfers::all_reduce_experiment());
  registry.add(ClaimCheck{"C04", "transfers", {}, transfers::claim_c04});
  registry.add(ClaimCheck{"C29", "transfers", {}, transfers::claim_c29});
  registry.add(ClaimCheck{"C31", "transfers", {}, transfers::claim_c31});
  registry.add(ClaimCheck{"C36", "transfers", {}, transfers::claim_c36});
  registry.add(ClaimCheck{"C37", "transfers", {}, transfers::claim_c37});
}

}  // namespace cudalab::harness
