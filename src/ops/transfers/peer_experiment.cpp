// Experiment `peer_transfers`: every ordered pair of GPUs of this host (one process drives them
// all), the link between them and the rates of the ways to move bytes from one to the other:
// cudaMemcpyPeerAsync one way and both ways at once, the SMs of the receiver reading the sender's
// memory (pull) and of the sender writing the receiver's (push), both over peer access (unified
// virtual addressing: one pointer space for every GPU), and staging through pinned host memory,
// the way without peer access. A 4-byte peer copy gives the latency. Every path is first run once
// into poisoned memory and its bytes compared with the source.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/nvml.hpp"
#include "harness/registry.hpp"
#include "harness/timer.hpp"
#include "ops/transfers/experiments.hpp"
#include "ops/transfers/kernels.hpp"
#include "ops/transfers/reference.hpp"

namespace cudalab::transfers {
namespace {

constexpr unsigned char kPoison = 0xAB;
constexpr std::size_t kLatencyBytes = 4;

std::string bus_id(int device) {
  char id[32] = {};
  CUDALAB_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof id, device));
  return id;
}

// One GPU's side of a pair: a source holding its own pattern (each side's differs, so a copy in
// the wrong direction cannot pass the check), a destination, a stream, a second one for the copy
// in the other direction, and the events that fork work to its streams and join it back, all made
// while that GPU was current (make_side).
struct Side {
  int device;
  std::vector<unsigned char> pattern;
  DeviceBuffer<unsigned char> source, destination;
  Stream stream, other;
  Event fork, join;
};

Side make_side(int device, std::size_t bytes, std::uint64_t seed) {
  const CurrentDevice current(device);
  const auto n = static_cast<std::int64_t>(bytes);
  Side side{device,
            std::vector<unsigned char>(bytes),
            DeviceBuffer<unsigned char>(n),
            DeviceBuffer<unsigned char>(n),
            Stream(),
            Stream(),
            Event(cudaEventDisableTiming),
            Event(cudaEventDisableTiming)};
  fill_pattern(side.pattern.data(), bytes, seed + static_cast<std::uint64_t>(device));
  CUDALAB_CUDA_CHECK(cudaMemcpy(side.source.data(), side.pattern.data(), bytes, cudaMemcpyHostToDevice));
  return side;
}

enum class Path { memcpy_peer, memcpy_peer_both, sm_pull, sm_push, host_staged };

const char* to_string(Path path) {
  switch (path) {
    case Path::memcpy_peer: return "memcpy_peer";
    case Path::memcpy_peer_both: return "memcpy_peer_both_ways";
    case Path::sm_pull: return "sm_pull";
    case Path::sm_push: return "sm_push";
    case Path::host_staged: return "host_staged";
  }
  return "";
}

// Runs `path` from `a` to `b` for `bytes`, enqueued on `stream` (a's, the timed one; a current):
// work on another stream forks from it and joins it through events, so its stop event follows
// every byte.
void move(Path path, Side& a, Side& b, std::size_t bytes, unsigned char* staging, cudaStream_t stream) {
  // Runs work(branch) on `on`'s stream `branch`, ordered after what `stream` holds and before what
  // it gets next; alongside() is enqueued on `stream` before the join, so the two run at once.
  const auto fork_join = [&](Side& on, cudaStream_t branch, const auto& work, const auto& alongside) {
    a.fork.record(stream);
    {
      const CurrentDevice current(on.device);
      CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(branch, a.fork.get(), 0));
      work(branch);
      on.join.record(branch);
    }
    alongside();
    CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(stream, on.join.get(), 0));
  };
  const auto nothing = [] {};
  switch (path) {
    case Path::memcpy_peer:
      CUDALAB_CUDA_CHECK(cudaMemcpyPeerAsync(b.destination.data(), b.device, a.source.data(), a.device, bytes, stream));
      break;
    case Path::memcpy_peer_both:  // each direction from its sender's stream, so both GPUs' copy engines work
      fork_join(
          b, b.other.get(),
          [&](cudaStream_t branch) {
            CUDALAB_CUDA_CHECK(
                cudaMemcpyPeerAsync(a.destination.data(), a.device, b.source.data(), b.device, bytes, branch));
          },
          [&] {
            CUDALAB_CUDA_CHECK(
                cudaMemcpyPeerAsync(b.destination.data(), b.device, a.source.data(), a.device, bytes, stream));
          });
      break;
    case Path::sm_pull:  // b's SMs read a's memory
      fork_join(
          b, b.stream.get(),
          [&](cudaStream_t branch) { copy_words(b.destination.data(), a.source.data(), bytes, branch); }, nothing);
      break;
    case Path::sm_push:  // a's SMs write b's memory
      copy_words(b.destination.data(), a.source.data(), bytes, stream);
      break;
    case Path::host_staged:
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(staging, a.source.data(), bytes, cudaMemcpyDeviceToHost, stream));
      fork_join(
          b, b.stream.get(),
          [&](cudaStream_t branch) {
            CUDALAB_CUDA_CHECK(cudaMemcpyAsync(b.destination.data(), staging, bytes, cudaMemcpyHostToDevice, branch));
          },
          nothing);
      break;
  }
}

// Poisons the destinations and the staging buffer, runs `path` once and compares what arrived
// with the sending side's pattern (and, both ways, a's destination with b's).
bool moves_right(Path path, Side& a, Side& b, std::size_t bytes, unsigned char* staging,
                 std::vector<unsigned char>& check) {
  if (staging != nullptr) std::memset(staging, kPoison, bytes);  // null: a path that stages nothing
  for (Side* side : {&a, &b}) {
    const CurrentDevice current(side->device);
    CUDALAB_CUDA_CHECK(cudaMemset(side->destination.data(), kPoison, bytes));
    CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());  // the poison lands before any copy starts
  }
  move(path, a, b, bytes, staging, a.stream.get());
  for (Side* side : {&a, &b}) {
    const CurrentDevice current(side->device);
    CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
  }
  const auto arrived = [&](const Side& at, const Side& from) {
    CUDALAB_CUDA_CHECK(cudaMemcpy(check.data(), at.destination.data(), bytes, cudaMemcpyDeviceToHost));
    return std::memcmp(check.data(), from.pattern.data(), bytes) == 0;
  };
  return arrived(b, a) && (path != Path::memcpy_peer_both || arrived(a, b));
}

nlohmann::json run_peer_transfers(const harness::ExperimentContext& context) {
  int count = 0;
  CUDALAB_CUDA_CHECK(cudaGetDeviceCount(&count));
  const nlohmann::json columns = {"pair",  "from",      "to",     "link", "peer_access", "path",
                                  "bytes", "median_us", "min_us", "gbps", "samples"};
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json notes = nlohmann::json::array();
  const nlohmann::json head = {{"name", "peer_transfers"},
                               {"op", "transfers"},
                               {"summary", "Copies between the GPUs of one host, pair by pair, by path"},
                               {"columns", columns}};
  if (count < 2) {
    notes.push_back("every row skipped: this host has " + std::to_string(count) +
                    " GPU; the experiment needs two or more");
    nlohmann::json result = head;
    result["rows"] = rows;
    result["notes"] = notes;
    return result;
  }
  const ExperimentScale scale = experiment_scale();
  std::size_t smallest_free = free_device_bytes();
  for (int d = 0; d < count; ++d) {
    const CurrentDevice current(d);
    smallest_free = std::min(smallest_free, free_device_bytes());
  }
  // Two buffers a GPU, and a pinned staging buffer: a quarter of the smallest free memory at most.
  const std::size_t largest =
      std::min(scale.small ? std::size_t{1} << 20 : std::size_t{256} << 20, smallest_free / 8) & ~std::size_t{15};
  std::vector<unsigned char> check(largest);
  PinnedBuffer<unsigned char> staging(static_cast<std::int64_t>(largest));
  std::vector<std::size_t> sizes = {std::min(std::size_t{1} << 20, largest), largest};
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  harness::KernelTimer timer;

  for (int from = 0; from < count; ++from)
    for (int to = 0; to < count; ++to) {
      if (from == to) continue;
      const bool forward = enable_peer_access(from, to), backward = enable_peer_access(to, from);
      const std::string link = harness::nvml_p2p_link(bus_id(from), bus_id(to));
      const std::string pair = std::to_string(from) + "->" + std::to_string(to);
      Side a = make_side(from, largest, context.seed), b = make_side(to, largest, context.seed);
      std::vector<Path> paths = {Path::memcpy_peer, Path::memcpy_peer_both, Path::host_staged};
      if (backward) paths.push_back(Path::sm_pull);
      if (forward) paths.push_back(Path::sm_push);
      if (!forward || !backward)
        notes.push_back(pair + ": no peer access " +
                        (forward    ? "back"
                         : backward ? "forward"
                                    : "either way") +
                        "; the SM paths that need it are skipped, and cudaMemcpyPeerAsync goes through the host");
      const CurrentDevice current(from);  // the timed stream's device
      const auto time_path = [&](Path path, std::size_t bytes) {
        if (context.progress)
          context.progress("peer_transfers " + pair + " " + to_string(path) + " " +
                           format_bytes(static_cast<double>(bytes)));
        if (!moves_right(path, a, b, bytes, staging.data(), check))
          throw Error(ErrorKind::cuda,
                      "peer_transfers: " + pair + " " + to_string(path) + " of " +
                          format_bytes(static_cast<double>(bytes)) + " delivered wrong bytes",
                      __FILE__, __LINE__);
        const harness::Summary t = timer.time([&](cudaStream_t s) { move(path, a, b, bytes, staging.data(), s); },
                                              a.stream.get(), copy_timing(scale));
        const double moved = static_cast<double>(bytes) * (path == Path::memcpy_peer_both ? 2 : 1);
        rows.push_back({pair, from, to, link, forward && backward ? "yes" : "no", to_string(path), bytes,
                        t.median * 1e3, t.min * 1e3, moved / (t.median * 1e-3) / 1e9, t.count});
      };
      for (Path path : paths)
        for (std::size_t bytes : sizes) time_path(path, bytes);
      time_path(Path::memcpy_peer, kLatencyBytes);
    }
  notes.push_back(
      "median_us, min_us: CUDA events on the sending GPU's stream around one transfer, after a warm-up; the "
      "receiving GPU's part of a path joins that stream through events; samples until a 2% spread or a time "
      "budget ends");
  notes.push_back(
      "gbps: bytes moved over the median; memcpy_peer_both_ways moves the size in each direction, each from its "
      "sender's stream");
  notes.push_back(
      "sm_pull: the receiving GPU's copy kernel reads the sender's memory; sm_push: the sender's writes the "
      "receiver's; host_staged: cudaMemcpyAsync to pinned host memory, then from it to the receiver");
  notes.push_back("link: NVML's NVLink peer-to-peer status for the pair (empty where NVML cannot say)");
  nlohmann::json result = head;
  result["rows"] = rows;
  result["notes"] = notes;
  return result;
}

}  // namespace

PeerCeilings measure_peer_ceilings(int from) {
  int count = 0;
  CUDALAB_CUDA_CHECK(cudaGetDeviceCount(&count));
  PeerCeilings best;
  harness::KernelTimer timer;
  const ExperimentScale scale;  // the full sizes whatever CUDALAB_TRANSFERS_SMALL says
  const std::size_t free_here = free_device_bytes();
  for (int to = 0; to < count; ++to) {
    if (to == from || !enable_peer_access(from, to) || !enable_peer_access(to, from)) continue;
    std::size_t free_there = 0;
    {
      const CurrentDevice other(to);
      free_there = free_device_bytes();
    }
    // Two buffers a side: an eighth of the smaller free memory at most.
    const std::size_t bytes = std::min(std::size_t{256} << 20, std::min(free_here, free_there) / 8) & ~std::size_t{15};
    if (bytes == 0) continue;
    std::vector<unsigned char> check(bytes);
    ++best.peers;
    Side a = make_side(from, bytes, 0), b = make_side(to, bytes, 0);
    const CurrentDevice current(from);
    const auto time = [&](Path path, std::size_t size) {
      if (!moves_right(path, a, b, size, nullptr, check))
        throw Error(ErrorKind::cuda,
                    "probe: cudaMemcpyPeerAsync from GPU " + std::to_string(from) + " to " + std::to_string(to) +
                        " delivered wrong bytes",
                    __FILE__, __LINE__);
      return timer.time([&](cudaStream_t s) { move(path, a, b, size, nullptr, s); }, a.stream.get(), copy_timing(scale))
          .median;
    };
    const double one_way = static_cast<double>(bytes) / (time(Path::memcpy_peer, bytes) * 1e-3) / 1e9;
    const double both = 2.0 * static_cast<double>(bytes) / (time(Path::memcpy_peer_both, bytes) * 1e-3) / 1e9;
    const double latency = time(Path::memcpy_peer, kLatencyBytes) * 1e3;
    best.gbps = std::max(best.gbps, one_way);
    best.bidirectional_gbps = std::max(best.bidirectional_gbps, both);
    best.latency_us = best.latency_us > 0 ? std::min(best.latency_us, latency) : latency;
  }
  return best;
}

harness::Experiment peer_transfers_experiment() {
  return {
      "peer_transfers", "transfers",
      "Copies between GPUs of one host, each ordered pair: peer copies one and both ways, SM pull and push over "
      "peer access, staged through pinned host memory; a 4-byte copy's latency",
      run_peer_transfers,
      copy_rate_plot("Copy rate between GPUs by path",
                     harness::predicted_level("tutorial 004: NVLink 4.0 on an H100, 900 GB/s both ways (C36)", 900))};
}

}  // namespace cudalab::transfers
