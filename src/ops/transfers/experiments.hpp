// The transfer, stream and peer experiments (all shown on docs/transfers.md) and what they share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/registry.hpp"
#include "harness/timer.hpp"

namespace cudalab::transfers {

// Sizes of the experiments. CUDALAB_TRANSFERS_SMALL=1 in the environment shrinks them to a few MiB
// and one or two samples, for compute-sanitizer runs (whose instrumentation makes the full sizes
// take minutes); the results of such a run are not measurements.
struct ExperimentScale {
  bool small = false;
  std::size_t largest_transfer_bytes = std::size_t{1} << 30;
  std::vector<std::size_t> managed_bytes = {std::size_t{16} << 20, std::size_t{256} << 20};
  std::int64_t pipeline_elements = std::int64_t{1} << 26;  // 256 MiB in, 256 MiB out
};
ExperimentScale experiment_scale();

// Warm-up, then samples until a 2% spread or a 0.1 s budget (at least 3 samples; no L2 flush: a
// transfer does not go through the cache the flush empties).
harness::TimingOptions copy_timing(const ExperimentScale& scale, int min_samples = 3);

// Makes `device` current for its lifetime (allocations, streams and events belong to the current
// device), then restores the one before: the multi-GPU experiments' way between GPUs.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device);
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;
  ~CurrentDevice();

 private:
  int previous_ = 0;
};

// The probe's ceilings between GPU `from` (current) and the others: how many it has peer access to
// both ways, and the best of them for cudaMemcpyPeerAsync of 256 MiB one way and both ways at once
// (GB/s, the bytes of both directions), and for a 4-byte copy (us); each timed with events, each
// copy checked once. Zeros where no other GPU has peer access.
struct PeerCeilings {
  int peers = 0;
  double gbps = 0, bidirectional_gbps = 0, latency_us = 0;
};
PeerCeilings measure_peer_ceilings(int from);

// cudaMemGetInfo's free bytes: the cap for every allocation, managed ones included (asking a GPU
// for more managed memory than it has free can hang it).
std::size_t free_device_bytes();

// A plots list of one line chart: GB/s against bytes (log scale), a line per path.
nlohmann::json copy_rate_plot(const std::string& title, nlohmann::json predicted = nlohmann::json::array());

// The streams_pipeline and streams_chunk_size tables' columns (the C29 claim and its tests read them).
const nlohmann::json& pipeline_columns();

harness::Experiment transfers_experiment();
harness::Experiment managed_memory_experiment();
harness::Experiment streams_pipeline_experiment();
harness::Experiment streams_chunk_size_experiment();
harness::Experiment streams_concurrency_experiment();
harness::Experiment peer_transfers_experiment();
harness::Experiment all_reduce_experiment();

}  // namespace cudalab::transfers
