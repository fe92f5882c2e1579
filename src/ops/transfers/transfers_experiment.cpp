// Experiment `transfers` (claim C04): host<->device copy rate by host memory kind, direction and
// size, from 4 KiB to 1 GiB, against the probe's pinned cudaMemcpy rate.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "harness/timer.hpp"
#include "ops/transfers/experiments.hpp"
#include "ops/transfers/host_memory.hpp"
#include "ops/transfers/kernels.hpp"
#include "ops/transfers/reference.hpp"

namespace cudalab::transfers {
namespace {

using harness::Summary;

constexpr unsigned char kPoison = 0xAB;  // a skipped run of k bytes escapes the check with odds 256^-k

enum class Direction { h2d, d2h };

// Sizes 4 KiB, 16 KiB, ... 1 GiB (powers of 4), capped at a quarter of the free device memory.
std::vector<std::size_t> transfer_sizes(std::size_t largest) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = std::size_t{4} << 10; s <= (std::size_t{1} << 30) && s <= largest; s *= 4) sizes.push_back(s);
  return sizes;
}

// One copy of `bytes`: cudaMemcpyAsync for the kinds the copy engine moves, the copy_words kernel
// for mapped memory (the GPU reads or writes the host pages itself).
void transfer(const HostMemory& host, void* device, std::size_t bytes, Direction direction, cudaStream_t stream) {
  if (host.kind() == HostKind::mapped) {
    if (direction == Direction::h2d)
      copy_words(device, host.device_view(), bytes, stream);
    else
      copy_words(host.device_view(), device, bytes, stream);
  } else if (direction == Direction::h2d) {
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(device, host.data(), bytes, cudaMemcpyHostToDevice, stream));
  } else {
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, bytes, cudaMemcpyDeviceToHost, stream));
  }
}

struct TransferBench {
  explicit TransferBench(std::size_t largest, std::uint64_t seed)
      : largest(largest),
        expected(HostKind::pageable, largest),
        check(HostKind::pinned, largest),
        device(static_cast<std::int64_t>(largest)),
        scratch(static_cast<std::int64_t>(largest)) {
    fill_pattern(expected.data(), largest, seed);
  }
  std::size_t largest;
  HostMemory expected;  // what every transfer must deliver
  HostMemory check;     // where a result is brought to be compared
  DeviceBuffer<unsigned char> device, scratch;
  Stream stream;
  harness::KernelTimer timer;
};

bool prefix_matches(const void* data, const HostMemory& expected, std::size_t bytes) {
  return std::memcmp(data, expected.data(), bytes) == 0;
}

// Runs one transfer into poisoned memory and compares every byte that arrived with the pattern.
bool transfer_is_right(TransferBench& b, const HostMemory& host, std::size_t bytes, Direction direction) {
  cudaStream_t s = b.stream.get();
  if (direction == Direction::h2d) {
    CUDALAB_CUDA_CHECK(cudaMemsetAsync(b.device.data(), kPoison, bytes, s));
    transfer(host, b.device.data(), bytes, direction, s);
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(b.check.data(), b.device.data(), bytes, cudaMemcpyDeviceToHost, s));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(s));
    return prefix_matches(b.check.data(), b.expected, bytes);
  }
  std::memset(host.data(), kPoison, bytes);
  transfer(host, b.device.data(), bytes, direction, s);
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(s));
  if (host.kind() != HostKind::write_combined) return prefix_matches(host.data(), b.expected, bytes);
  // The CPU reads write-combined memory uncached, a word at a time; the copy engine reads it at
  // full speed, so the check goes through the device.
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(b.scratch.data(), host.data(), bytes, cudaMemcpyHostToDevice, s));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(b.check.data(), b.scratch.data(), bytes, cudaMemcpyDeviceToHost, s));
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(s));
  return prefix_matches(b.check.data(), b.expected, bytes);
}

nlohmann::json run_transfers(const harness::ExperimentContext& context) {
  const ExperimentScale scale = experiment_scale();
  int can_map = 0, device = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, device));
  const std::size_t largest = std::min(scale.largest_transfer_bytes, free_device_bytes() / 4);
  TransferBench bench(largest, context.seed);
  // The device holds the pattern for the device-to-host rows (an H2D check poisons it, then
  // delivers the pattern again, so it stays there).
  CUDALAB_CUDA_CHECK(cudaMemcpy(bench.device.data(), bench.expected.data(), largest, cudaMemcpyHostToDevice));

  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json notes = nlohmann::json::array();
  std::vector<HostKind> kinds = {HostKind::pageable, HostKind::pinned, HostKind::write_combined};
  if (can_map)
    kinds.push_back(HostKind::mapped);
  else
    notes.push_back("mapped (zero-copy) rows skipped: the device reports canMapHostMemory = 0");
  for (HostKind kind : kinds) {
    HostMemory host(kind, largest);
    std::memcpy(host.data(), bench.expected.data(), largest);  // also touches every pageable page once
    for (Direction direction : {Direction::h2d, Direction::d2h}) {
      const std::string path = std::string(to_string(kind)) + (direction == Direction::h2d ? " H2D" : " D2H");
      for (std::size_t bytes : transfer_sizes(largest)) {
        if (context.progress) context.progress("transfers " + path + " " + format_bytes(double(bytes)));
        if (!transfer_is_right(bench, host, bytes, direction))
          throw Error(ErrorKind::cuda,
                      "transfers: " + path + " of " + format_bytes(double(bytes)) + " delivered wrong bytes", __FILE__,
                      __LINE__);
        const Summary t =
            bench.timer.time([&](cudaStream_t s) { transfer(host, bench.device.data(), bytes, direction, s); },
                             bench.stream.get(), copy_timing(scale));
        const double gbps = bytes / (t.median * 1e-3) / 1e9;
        const double peak =
            direction == Direction::h2d ? context.ceilings.h2d_pinned_gbps : context.ceilings.d2h_pinned_gbps;
        rows.push_back({path, to_string(kind), direction == Direction::h2d ? "H2D" : "D2H", bytes, t.median * 1e3,
                        t.min * 1e3, gbps, peak > 0 ? 100 * gbps / peak : 0.0, t.count});
      }
    }
  }
  notes.push_back(
      "median_us, min_us: CUDA events around one transfer on a non-blocking stream, after a warm-up; "
      "samples until the spread is under 2% or a time budget ends");
  notes.push_back(
      "mapped: no copy call; the copy_words kernel reads (H2D) or writes (D2H) the mapped host pages over PCIe");
  notes.push_back(
      "pct_of_probe_pinned: GB/s over the probe's pinned cudaMemcpyAsync rate of 256 MiB in that direction (" +
      format_fixed(context.ceilings.h2d_pinned_gbps, 2) + " H2D, " + format_fixed(context.ceilings.d2h_pinned_gbps, 2) +
      " D2H GB/s on this run)");
  notes.push_back(
      "every size of every path was first run once into poisoned memory (0xAB bytes) and every byte that "
      "arrived compared with the source pattern");
  return {{"name", "transfers"},
          {"op", "transfers"},
          {"summary", "Host<->device copy rate by host memory kind, direction and size (claim C04)"},
          {"columns",
           {"path", "kind", "direction", "bytes", "median_us", "min_us", "gbps", "pct_of_probe_pinned", "samples"}},
          {"rows", rows},
          {"notes", notes}};
}

}  // namespace

harness::Experiment transfers_experiment() {
  return {"transfers", "transfers",
          "Host<->device copy rate: pageable, pinned, write-combined, mapped; 4 KiB..1 GiB (C04)", run_transfers,
          copy_rate_plot("Host<->device copy rate by host memory kind",
                         {harness::predicted_level("tutorial 000: pinned, 12 GB/s (C04)", 12)[0],
                          harness::predicted_level("tutorial 000: pageable, 6 GB/s (C04)", 6)[0]})};
}

}  // namespace cudalab::transfers
