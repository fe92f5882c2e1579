// Registry entries for the transfers page: the transfer, managed-memory and stream experiments,
// the settings they share, and the claims their tables answer (C04, C29, C31).
#include <cstdlib>
#include <string>

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

std::size_t free_device_bytes() {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDALAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

namespace {

using harness::experiment;
using harness::verdict;

bool has_column(const nlohmann::json& table, const std::string& column) {
  for (const auto& c : table["columns"])
    if (c == column) return true;
  return false;
}

double cell(const nlohmann::json& table, const nlohmann::json& row, const std::string& column) {
  const auto& columns = table["columns"];
  for (std::size_t k = 0; k < columns.size(); ++k)
    if (columns[k] == column) return row[k].get<double>();
  throw Error(ErrorKind::invalid_argument, "results: no column '" + column + "'", __FILE__, __LINE__);
}

// C04: pinned H2D against pageable H2D at the largest size measured.
nlohmann::json claim_c04(const nlohmann::json& results) {
  const auto* table = experiment(results, "transfers");
  if (table == nullptr) return nullptr;
  double largest = 0;
  for (const auto& row : (*table)["rows"]) largest = std::max(largest, cell(*table, row, "bytes"));
  double pinned = 0, pageable = 0;
  for (const auto& row : (*table)["rows"]) {
    if (cell(*table, row, "bytes") != largest || row[2] != "H2D") continue;
    if (row[1] == "pinned") pinned = cell(*table, row, "gbps");
    if (row[1] == "pageable") pageable = cell(*table, row, "gbps");
  }
  if (pinned <= 0 || pageable <= 0) return nullptr;
  const double ratio = pinned / pageable;
  const std::string figures = "pinned " + format_fixed(pinned, 1) + " GB/s, pageable " + format_fixed(pageable, 1) +
                              " GB/s H2D at " + format_bytes(largest);
  std::string v = "does not hold";
  if (ratio >= 1.5 && ratio <= 2.7)
    v = "holds (about 2x)";
  else if (ratio > 2.7 && ratio <= 5.5)
    v = "holds for the 4x figure";
  else if (ratio > 1.05)
    v = "holds partly: pinned is faster, by " + format_fixed(ratio, 1) + "x rather than 2x or 4x";
  return verdict("C04",
                 "Pinned host memory transfers at ~2x pageable (12 vs 6 GB/s); another page says 4x (12 vs 3 GB/s)",
                 "seed 000", "pinned / pageable = 2 (or 4)", figures, ratio, v);
}

// C29: the pipeline's best speedup over the sequential run, depth- against breadth-first, and
// which stream count wins.
nlohmann::json claim_c29(const nlohmann::json& results) {
  const auto* table = experiment(results, "streams_pipeline");
  // Files from before the duplex bound was measured are not judged.
  if (table == nullptr || !has_column(*table, "pct_of_duplex_bound")) return nullptr;
  double best_speedup = 0, best_pct = 0, best_duplex_pct = 0, best_depth = 0, best_breadth = 0;
  int best_streams = 0;
  for (const auto& row : (*table)["rows"]) {
    const std::string order = row[1];
    if (order != "depth-first" && order != "breadth-first") continue;
    const double time = cell(*table, row, "time_ms");
    if (cell(*table, row, "streams") >= 2) {
      const double speedup = cell(*table, row, "speedup_vs_sequential");
      if (speedup > best_speedup) {
        best_speedup = speedup;
        best_pct = cell(*table, row, "pct_of_ideal");
        best_duplex_pct = cell(*table, row, "pct_of_duplex_bound");
        best_streams = static_cast<int>(cell(*table, row, "streams"));
      }
    }
    double& best = order == "depth-first" ? best_depth : best_breadth;
    if (best == 0 || time < best) best = time;
  }
  if (best_speedup <= 0 || best_depth <= 0 || best_breadth <= 0) return nullptr;
  const double order_ratio = best_breadth / best_depth;
  const bool speedup_holds = best_speedup >= 0.8 * 2.4;
  const bool order_holds = order_ratio >= 1.2;
  const bool streams_hold = best_streams >= 2 && best_streams <= 8;
  const int held = speedup_holds + order_holds + streams_hold;
  std::string v = held == 3 ? "holds" : held == 0 ? "does not hold" : "holds partly:";
  if (held == 1 || held == 2) {
    v += std::string(speedup_holds ? " speedup holds;" : " speedup short;") +
         (order_holds ? " depth-first wins;" : " issue order makes no 1.5x difference;") +
         (streams_hold ? " best at 2-8 streams" : " best outside 2-8 streams");
  }
  return verdict("C29",
                 "Multi-stream pipelining: 24 to 10 ms (2.4x), \"3-4x\"; depth-first issue order 1.5x better than "
                 "breadth-first; 2-8 streams optimal",
                 "seeds 000, 001", "speedup 2.4x (3-4x); depth-first / breadth-first = 1.5; best at 2-8 streams",
                 "best " + format_fixed(best_speedup, 2) + "x over sequential at " + std::to_string(best_streams) +
                     " streams (" + format_fixed(best_pct, 1) + "% of max(H2D, kernel, D2H), " +
                     format_fixed(best_duplex_pct, 1) +
                     "% of the bound with both copy directions at once); "
                     "best breadth-first / best depth-first time = " +
                     format_fixed(order_ratio, 2),
                 best_speedup, v);
}

// C31: managed memory with no hint against the explicit copy, and prefetch against it, at the
// largest size measured.
nlohmann::json claim_c31(const nlohmann::json& results) {
  const auto* table = experiment(results, "managed_memory");
  if (table == nullptr || (*table)["rows"].empty()) return nullptr;
  double largest = 0;
  for (const auto& row : (*table)["rows"]) largest = std::max(largest, cell(*table, row, "mib"));
  double no_hint = 0, prefetch = 0, advice = 0;
  for (const auto& row : (*table)["rows"]) {
    if (cell(*table, row, "mib") != largest) continue;
    const double relative = cell(*table, row, "explicit_over_this");
    if (row[1] == "managed, no hint") no_hint = relative;
    if (row[1] == "managed, prefetch") prefetch = relative;
    if (row[1] == "managed, advise preferred host + accessed by GPU" || row[1] == "managed, advise read-mostly")
      advice = std::max(advice, relative);
  }
  if (no_hint <= 0) return nullptr;
  const bool basic_slower = no_hint < 0.9;
  const bool prefetch_near = prefetch >= 0.8;
  std::string v = basic_slower && prefetch_near ? "holds"
                  : basic_slower || prefetch_near
                      ? (basic_slower ? "holds partly: basic is slower, prefetch stays well behind"
                                      : "holds partly: prefetch is near, but basic is not slower")
                      : "does not hold";
  if (prefetch <= 0)
    v = basic_slower ? "holds partly: basic is slower; prefetch not measured on this device" : "does not hold";
  return verdict(
      "C31",
      "Unified memory: basic is slower, prefetch (cudaMemPrefetchAsync) and advice bring it near explicit copies",
      "seeds 000, 004", "managed no-hint slower than an explicit copy; prefetched managed near it",
      "at " + format_fixed(largest, 0) + " MiB, as a fraction of the explicit copy's speed: no hint " +
          format_fixed(no_hint, 2) + ", prefetch " + format_fixed(prefetch, 2) + ", best advice " +
          format_fixed(advice, 2),
      prefetch > 0 ? prefetch / no_hint : 0.0, v);
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
  registry.add(ClaimCheck{"C04", "transfers", {}, transfers::claim_c04});
  registry.add(ClaimCheck{"C29", "transfers", {}, transfers::claim_c29});
  registry.add(ClaimCheck{"C31", "transfers", {}, transfers::claim_c31});
}

}  // namespace cudalab::harness
