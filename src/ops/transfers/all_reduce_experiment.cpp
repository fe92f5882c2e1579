// Experiment `all_reduce`: the sum of one array per GPU, left on every GPU, over every GPU of the
// host driven by one process, f32 and bf16, 8 KiB to 1 GiB an array. The ladder: staged through
// pinned host memory (each GPU's array copied to the host, summed there by one CPU thread, the sum
// copied back to every GPU); a ring of cudaMemcpyPeerAsync copies (n - 1 steps of copying a chunk
// from the left neighbour and adding it, then n - 1 of passing the summed chunks on); the same ring
// whose reduce-scatter steps are one kernel each, reading the left neighbour's chunk over peer
// access and adding it as it arrives (ring_pull: no add after the copy); one-shot (each GPU's kernel reads
// every GPU's array over peer access and writes the sum: one pass, every link carrying the whole array); two-shot (each
// GPU sums one n-th of the elements from every GPU's array, then copies every other GPU's n-th of the sum: each link
// carries 2 (n - 1) / n of the array, as a ring does); flags (the library's all_reduce_ipc, which cudalab.distributed
// runs one process a GPU: one launch a GPU whose blocks meet the other GPUs' at flags in memory, no events; two-shot
// from 2 MiB on three GPUs or more; in place, so the input is first copied into the output); NCCL's all-reduce as
// the baseline, in the same run. Every rung
// at every size is checked against a host sum of the same inputs first; a wrong element throws.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "core/format.hpp"
#include "cudalab/all_reduce.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "harness/timer.hpp"
#include "ops/transfers/all_reduce.hpp"
#include "ops/transfers/experiments.hpp"

namespace cudalab::transfers {
namespace {

constexpr std::size_t kStagedLargestBytes = std::size_t{8} << 20;  // the host sum's single thread is slow past it
constexpr std::size_t kFlagsLargestBytes = std::size_t{64} << 20;  // its staging buffers hold two such arrays

// A value in [-1, 1) from (seed, gpu, index): splitmix64's finaliser.
double input_value(std::uint64_t seed, int gpu, std::int64_t index) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(gpu) * 0x100000001ull +
                                                    static_cast<std::uint64_t>(index) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / static_cast<double>(1ull << 52) - 1.0;
}

enum class Rung { host_staged, ring, ring_pull, one_shot, two_shot, flags, nccl };

const char* to_string(Rung rung) {
  switch (rung) {
    case Rung::host_staged: return "host_staged";
    case Rung::ring: return "ring";
    case Rung::ring_pull: return "ring_pull";
    case Rung::one_shot: return "one_shot";
    case Rung::two_shot: return "two_shot";
    case Rung::flags: return "flags";
    case Rung::nccl: return "nccl";
  }
  return "";
}

// One GPU's arrays (its input, the output every rung writes, the ring's received chunk), stream and
// events (the fork and join, the two-shot's scattered part, the ring's steps), made while that GPU
// was current.
struct Gpu {
  DeviceBuffer<unsigned char> input, output, scratch;
  Stream stream;
  Event forked, done, scattered;
  std::vector<Event> steps;             // the ring's: reduce-scatter steps 0 .. n - 2, then all-gather steps
  DeviceBuffer<unsigned char> staging;  // flags: all_reduce_ipc's buffer (two halves)
  DeviceBuffer<unsigned> signals;       // and its signal array, zeroed once
};

struct Bench {
  int gpus = 0;
  DType dtype = DType::f32;
  std::vector<Gpu> gpu;
  std::vector<PinnedBuffer<unsigned char>> staged;  // the host copies of each GPU's array
  PinnedBuffer<unsigned char> staged_sum;
  std::vector<double> exact, magnitude;  // the exact sum and the sum of magnitudes, element by element
  std::int64_t staged_count = 0;         // the elements the host callback sums
  unsigned epoch = 0;                    // flags: the last call's
};

// fp32 sums in GPU order, as the one-shot kernel adds, a GPU's array at a time over the sums (the
// order the adds make for each element is the same, and the loops run at memory speed).
template <typename T, typename Widen, typename Round>
void sum_arrays(const Bench& b, Widen widen, Round round) {
  std::vector<float> sum(static_cast<std::size_t>(b.staged_count), 0.0f);
  for (int g = 0; g < b.gpus; ++g) {
    const T* in = reinterpret_cast<const T*>(b.staged[static_cast<std::size_t>(g)].data());
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += widen(in[i]);
  }
  T* out = reinterpret_cast<T*>(b.staged_sum.data());
  for (std::size_t i = 0; i < sum.size(); ++i) out[i] = round(sum[i]);
}

void sum_on_host(void* data) {
  const auto& b = *static_cast<const Bench*>(data);
  if (b.dtype == DType::bf16) {
    sum_arrays<__nv_bfloat16>(
        b, [](__nv_bfloat16 x) { return __bfloat162float(x); }, [](float x) { return __float2bfloat16_rn(x); });
  } else {
    sum_arrays<float>(
        b, [](float x) { return x; }, [](float x) { return x; });
  }
}

// Runs `rung` on `count` elements, enqueued from GPU 0's stream (current): every GPU's stream
// forks from it and joins it, so its stop event follows the whole all-reduce.
void run_rung(Rung rung, Bench& b, const Nccl& nccl, std::int64_t count, cudaStream_t stream) {
  const std::size_t bytes = static_cast<std::size_t>(count) * size_of(b.dtype);
  b.gpu[0].forked.record(stream);
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  std::vector<cudaStream_t> streams;
  for (Gpu& g : b.gpu) {
    inputs.push_back(g.input.data());
    outputs.push_back(g.output.data());
    streams.push_back(g.stream.get());
  }
  for (int g = 0; g < b.gpus; ++g) {
    const CurrentDevice current(g);
    CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(streams[static_cast<std::size_t>(g)], b.gpu[0].forked.get(), 0));
  }
  const auto join = [&] {
    for (int g = 0; g < b.gpus; ++g) {
      const CurrentDevice current(g);
      b.gpu[static_cast<std::size_t>(g)].done.record(streams[static_cast<std::size_t>(g)]);
      CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(stream, b.gpu[static_cast<std::size_t>(g)].done.get(), 0));
    }
  };
  switch (rung) {
    case Rung::host_staged:
      for (int g = 0; g < b.gpus; ++g) {
        const CurrentDevice current(g);
        CUDALAB_CUDA_CHECK(cudaMemcpyAsync(b.staged[static_cast<std::size_t>(g)].data(), inputs[g], bytes,
                                           cudaMemcpyDeviceToHost, streams[g]));
      }
      join();
      b.staged_count = count;
      CUDALAB_CUDA_CHECK(cudaLaunchHostFunc(stream, sum_on_host, &b));
      b.gpu[0].forked.record(stream);
      for (int g = 0; g < b.gpus; ++g) {
        const CurrentDevice current(g);
        CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(streams[g], b.gpu[0].forked.get(), 0));
        CUDALAB_CUDA_CHECK(cudaMemcpyAsync(outputs[g], b.staged_sum.data(), bytes, cudaMemcpyHostToDevice, streams[g]));
      }
      break;
    case Rung::one_shot:
      for (int g = 0; g < b.gpus; ++g) {
        const CurrentDevice current(g);
        one_shot_sum(b.dtype, inputs.data(), b.gpus, outputs[g], count, streams[g]);
      }
      break;
    case Rung::two_shot: {
      const std::size_t element = size_of(b.dtype);
      const auto at = [&](const void* base, std::int64_t first) {
        return static_cast<const unsigned char*>(base) + static_cast<std::size_t>(first) * element;
      };
      const auto out_at = [&](int g, std::int64_t first) {
        return static_cast<unsigned char*>(outputs[static_cast<std::size_t>(g)]) +
               static_cast<std::size_t>(first) * element;
      };
      // Reduce-scatter: GPU g sums its part from every GPU's array into its own output.
      for (int g = 0; g < b.gpus; ++g) {
        const CurrentDevice current(g);
        const AllReducePart mine = all_reduce_part(g, b.gpus, count, b.dtype);
        std::vector<const void*> parts;
        for (const void* input : inputs) parts.push_back(at(input, mine.first));
        one_shot_sum(b.dtype, parts.data(), b.gpus, out_at(g, mine.first), mine.count, streams[g]);
        b.gpu[static_cast<std::size_t>(g)].scattered.record(streams[g]);
      }
      // All-gather: once every part is summed, GPU g copies the other GPUs' parts of the sum.
      for (int g = 0; g < b.gpus; ++g) {
        const CurrentDevice current(g);
        for (int p = 0; p < b.gpus; ++p) {
          if (p == g) continue;
          CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(streams[g], b.gpu[static_cast<std::size_t>(p)].scattered.get(), 0));
          const AllReducePart theirs = all_reduce_part(p, b.gpus, count, b.dtype);
          if (theirs.count == 0) continue;
          CUDALAB_CUDA_CHECK(cudaMemcpyAsync(out_at(g, theirs.first), at(outputs[p], theirs.first),
                                             static_cast<std::size_t>(theirs.count) * element, cudaMemcpyDefault,
                                             streams[g]));
        }
      }
      break;
    }
    case Rung::ring:
    case Rung::ring_pull: {
      // Chunk c is all_reduce_part(c mod n). Reduce-scatter: at step s GPU r copies chunk
      // r - 1 - s of its left neighbour's partial sums (of its input at step 0) into its scratch
      // and adds its own input's chunk into its output (ring_pull: one kernel reads the neighbour's
      // chunk where it lies and adds); after n - 1 steps it holds chunk r + 1's sum. All-gather: at
      // step t it copies chunk r - t's sum from its left neighbour's output.
      const int n = b.gpus;
      const std::size_t element = size_of(b.dtype);
      const auto chunk = [&](int c) { return all_reduce_part(((c % n) + n) % n, n, count, b.dtype); };
      const auto in_at = [&](int g, std::int64_t first) {
        return static_cast<const unsigned char*>(inputs[static_cast<std::size_t>(g)]) +
               static_cast<std::size_t>(first) * element;
      };
      const auto out_at = [&](int g, std::int64_t first) {
        return static_cast<unsigned char*>(outputs[static_cast<std::size_t>(g)]) +
               static_cast<std::size_t>(first) * element;
      };
      const auto gpu = [&](int g) -> Gpu& { return b.gpu[static_cast<std::size_t>(g)]; };
      const auto wait = [&](int g, const Event& event) {
        CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(streams[static_cast<std::size_t>(g)], event.get(), 0));
      };
      const auto step = [&](int g, int k) -> const Event& { return gpu(g).steps[static_cast<std::size_t>(k)]; };
      for (int s = 0; s < n - 1; ++s) {
        for (int r = 0; r < n; ++r) {
          const int left = (r + n - 1) % n;
          const CurrentDevice current(r);
          cudaStream_t stream_r = streams[static_cast<std::size_t>(r)];
          if (s > 0) wait(r, step(left, s - 1));
          const AllReducePart part = chunk(r - 1 - s);
          if (part.count > 0) {
            const unsigned char* from = s == 0 ? in_at(left, part.first) : out_at(left, part.first);
            if (rung == Rung::ring)
              CUDALAB_CUDA_CHECK(cudaMemcpyPeerAsync(gpu(r).scratch.data(), r, from, left,
                                                     static_cast<std::size_t>(part.count) * element, stream_r));
            const void* addends[2] = {rung == Rung::ring ? gpu(r).scratch.data() : from, in_at(r, part.first)};
            one_shot_sum(b.dtype, addends, 2, out_at(r, part.first), part.count, stream_r);
          }
          step(r, s).record(stream_r);
        }
      }
      for (int t = 0; t < n - 1; ++t) {
        for (int r = 0; r < n; ++r) {
          const int left = (r + n - 1) % n, right = (r + 1) % n;
          const CurrentDevice current(r);
          cudaStream_t stream_r = streams[static_cast<std::size_t>(r)];
          // The left neighbour's chunk is whole after its last reduce-scatter step or its all-gather
          // step t - 1; r's output is read by its right neighbour until that one's last
          // reduce-scatter step.
          wait(r, step(left, n - 2 + t));
          if (t == 0) wait(r, step(right, n - 2));
          const AllReducePart part = chunk(r - t);
          if (part.count > 0)
            CUDALAB_CUDA_CHECK(cudaMemcpyPeerAsync(out_at(r, part.first), r, out_at(left, part.first), left,
                                                   static_cast<std::size_t>(part.count) * element, stream_r));
          step(r, n - 1 + t).record(stream_r);
        }
      }
      break;
    }
    case Rung::flags: {
      std::vector<void*> buffers;
      std::vector<unsigned*> signals;
      for (Gpu& g : b.gpu) {
        buffers.push_back(g.staging.data());
        signals.push_back(g.signals.data());
      }
      ++b.epoch;
      for (int g = 0; g < b.gpus; ++g) {
        const CurrentDevice current(g);
        CUDALAB_CUDA_CHECK(cudaMemcpyAsync(outputs[g], inputs[g], bytes, cudaMemcpyDeviceToDevice, streams[g]));
        const auto staging = static_cast<std::size_t>(b.gpu[static_cast<std::size_t>(g)].staging.bytes());
        if (b.dtype == DType::bf16) {
          all_reduce_ipc(static_cast<__nv_bfloat16*>(outputs[g]), count, buffers.data(), staging, signals.data(), g,
                         b.gpus, b.epoch, streams[g]);
        } else {
          all_reduce_ipc(static_cast<float*>(outputs[g]), count, buffers.data(), staging, signals.data(), g, b.gpus,
                         b.epoch, streams[g]);
        }
      }
      break;
    }
    case Rung::nccl: nccl.all_reduce(b.dtype, inputs.data(), outputs.data(), count, streams.data()); break;
  }
  join();
}

// Poisons every output, runs `rung` once, and compares every GPU's every element with the exact
// sum within all_reduce_bound. Returns "" or what was wrong.
std::string rung_error(Rung rung, Bench& b, const Nccl& nccl, std::int64_t count) {
  const std::size_t bytes = static_cast<std::size_t>(count) * size_of(b.dtype);
  for (auto& staged : b.staged) std::memset(staged.data(), 0xFF, static_cast<std::size_t>(staged.size()));
  std::memset(b.staged_sum.data(), 0xFF, static_cast<std::size_t>(b.staged_sum.size()));
  for (int g = 0; g < b.gpus; ++g) {
    const CurrentDevice current(g);
    CUDALAB_CUDA_CHECK(cudaMemset(b.gpu[static_cast<std::size_t>(g)].output.data(), 0xFF, bytes));  // NaN in both
    CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
  }
  run_rung(rung, b, nccl, count, b.gpu[0].stream.get());
  std::vector<unsigned char> host(bytes);
  for (int g = 0; g < b.gpus; ++g) {
    const CurrentDevice current(g);
    CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
    CUDALAB_CUDA_CHECK(
        cudaMemcpy(host.data(), b.gpu[static_cast<std::size_t>(g)].output.data(), bytes, cudaMemcpyDeviceToHost));
    for (std::int64_t i = 0; i < count; ++i) {
      const double got = element_to_double(b.dtype, host.data(), i);
      const double want = b.exact[static_cast<std::size_t>(i)];
      if (!(std::fabs(got - want) <= all_reduce_bound(b.dtype, b.gpus, b.magnitude[static_cast<std::size_t>(i)])))
        return "GPU " + std::to_string(g) + " element " + std::to_string(i) + ": " + format_fixed(got, 6) +
               ", the exact sum " + format_fixed(want, 6);
    }
  }
  return "";
}

nlohmann::json run_all_reduce(const harness::ExperimentContext& context) {
  int gpus = 0;
  CUDALAB_CUDA_CHECK(cudaGetDeviceCount(&gpus));
  gpus = std::min(gpus, kAllReduceMaxGpus);
  nlohmann::json result = {{"name", "all_reduce"},
                           {"op", "transfers"},
                           {"summary",
                            "All-reduce (sum) over the GPUs of one host: staged through the host, a ring of peer "
                            "copies, a ring of kernel pulls, one-shot, two-shot, one launch meeting at flags, NCCL"},
                           {"columns",
                            {"rung", "dtype", "gpus", "bytes", "median_us", "min_us", "algbw_gbps", "busbw_gbps",
                             "of_nccl_busbw", "of_peer_copy", "samples"}},
                           {"rows", nlohmann::json::array()},
                           {"notes", nlohmann::json::array()}};
  nlohmann::json& rows = result["rows"];
  nlohmann::json& notes = result["notes"];
  if (gpus < 2) {
    notes.push_back("every row skipped: this host has " + std::to_string(gpus) +
                    " GPU; the experiment needs two or more");
    return result;
  }
  const ExperimentScale scale = experiment_scale();
  bool all_peers = true;
  for (int a = 0; a < gpus; ++a)
    for (int c = 0; c < gpus; ++c)
      if (a != c) all_peers = enable_peer_access(a, c) && all_peers;
  if (!all_peers)
    notes.push_back("ring, ring_pull, one_shot, two_shot and flags skipped: some pair of GPUs has no peer access");
  const Nccl nccl(gpus);
  if (nccl.available()) {
    notes.push_back("NCCL " + nccl.version() + ", one communicator per GPU in this process (ncclCommInitAll)");
  } else {
    notes.push_back("nccl skipped: " + nccl.reason());
  }
  std::vector<Rung> rungs = {Rung::host_staged};
  if (all_peers) {
    rungs.push_back(Rung::ring);
    rungs.push_back(Rung::ring_pull);
    rungs.push_back(Rung::one_shot);
    rungs.push_back(Rung::two_shot);
    rungs.push_back(Rung::flags);
  }
  if (nccl.available()) rungs.push_back(Rung::nccl);

  std::size_t smallest_free = free_device_bytes();
  for (int g = 0; g < gpus; ++g) {
    const CurrentDevice current(g);
    smallest_free = std::min(smallest_free, free_device_bytes());
  }
  const std::size_t fits = smallest_free / 4;  // each GPU holds an input, an output and the ring's chunk
  const std::size_t largest = std::min(scale.small ? std::size_t{1} << 20 : std::size_t{1} << 30, fits);
  std::vector<std::size_t> sizes;
  for (std::size_t s = std::size_t{8} << 10; s <= largest; s *= 4) sizes.push_back(s);
  if (!sizes.empty() && sizes.back() < largest && largest % 16 == 0) sizes.push_back(largest);
  // 256 MiB as well (the powers of 4 from 8 KiB pass it): where large messages are usually compared.
  if (const std::size_t mid = std::size_t{256} << 20; mid < largest) sizes.push_back(mid);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());

  // --n: the arrays' elements, the same count in each dtype, instead of the byte sizes above.
  const auto sizes_of = [&](DType dtype) {
    if (context.sizes.empty()) return sizes;
    std::vector<std::size_t> chosen;
    for (const std::int64_t n : context.sizes) {
      const std::size_t bytes = static_cast<std::size_t>(n) * size_of(dtype);
      CUDALAB_REQUIRE(bytes <= fits, "all_reduce: " + std::to_string(n) + " " + cudalab::to_string(dtype) +
                                         " elements need " + format_bytes(static_cast<double>(bytes)) +
                                         " an array; every GPU has room for " +
                                         format_bytes(static_cast<double>(fits)));
      chosen.push_back(bytes);
    }
    return chosen;
  };
  harness::KernelTimer timer;
  for (DType dtype : {DType::f32, DType::bf16}) {
    const std::vector<std::size_t> sizes = sizes_of(dtype);
    if (sizes.empty()) {
      notes.push_back("every row skipped: no GPU has room for 8 KiB arrays");
      break;
    }
    const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
    Bench b;
    b.gpus = gpus;
    b.dtype = dtype;
    const std::int64_t most = static_cast<std::int64_t>(largest / size_of(dtype));
    std::vector<unsigned char> host(largest);
    b.exact.assign(static_cast<std::size_t>(most), 0.0);
    b.magnitude.assign(static_cast<std::size_t>(most), 0.0);
    for (int g = 0; g < gpus; ++g) {
      for (std::int64_t i = 0; i < most; ++i) {
        element_from_double(dtype, input_value(context.seed, g, i), host.data(), i);
        const double x = element_to_double(dtype, host.data(), i);  // the value as stored
        b.exact[static_cast<std::size_t>(i)] += x;
        b.magnitude[static_cast<std::size_t>(i)] += std::fabs(x);
      }
      const CurrentDevice current(g);
      const std::size_t chunk_bytes =
          static_cast<std::size_t>(all_reduce_part(0, gpus, most, dtype).count) * size_of(dtype);
      // flags: two halves of the largest array it runs, each a 32-byte multiple.
      const std::size_t flags_half = all_peers ? (std::min(largest, kFlagsLargestBytes) + 31) / 32 * 32 : 0;
      Gpu side{DeviceBuffer<unsigned char>(static_cast<std::int64_t>(largest)),
               DeviceBuffer<unsigned char>(static_cast<std::int64_t>(largest)),
               DeviceBuffer<unsigned char>(static_cast<std::int64_t>(chunk_bytes)),
               Stream(),
               Event(cudaEventDisableTiming),
               Event(cudaEventDisableTiming),
               Event(cudaEventDisableTiming),
               {},
               DeviceBuffer<unsigned char>(static_cast<std::int64_t>(2 * flags_half)),
               DeviceBuffer<unsigned>(all_peers ? kAllReduceSignalWords : 0)};
      for (int step = 0; step < 2 * (gpus - 1); ++step) side.steps.emplace_back(cudaEventDisableTiming);
      if (side.signals.bytes() > 0) CUDALAB_CUDA_CHECK(cudaMemset(side.signals.data(), 0, side.signals.bytes()));
      CUDALAB_CUDA_CHECK(cudaMemcpy(side.input.data(), host.data(), largest, cudaMemcpyHostToDevice));
      b.gpu.push_back(std::move(side));
      b.staged.emplace_back(static_cast<std::int64_t>(std::min(largest, kStagedLargestBytes)));
    }
    b.staged_sum = PinnedBuffer<unsigned char>(static_cast<std::int64_t>(std::min(largest, kStagedLargestBytes)));

    const CurrentDevice current(0);  // the timed stream's GPU
    std::vector<double> nccl_busbw(sizes.size(), 0.0);
    for (Rung rung :
         {Rung::nccl, Rung::one_shot, Rung::two_shot, Rung::flags, Rung::ring, Rung::ring_pull, Rung::host_staged}) {
      if (std::find(rungs.begin(), rungs.end(), rung) == rungs.end()) continue;
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        const std::size_t bytes = sizes[k];
        if (rung == Rung::host_staged && bytes > kStagedLargestBytes) continue;
        if (rung == Rung::flags && bytes > kFlagsLargestBytes) continue;
        const auto count = static_cast<std::int64_t>(bytes / size_of(dtype));
        if (context.progress)
          context.progress("all_reduce " + std::string(to_string(rung)) + " " + cudalab::to_string(dtype) + " " +
                           format_bytes(static_cast<double>(bytes)));
        const std::string wrong = rung_error(rung, b, nccl, count);
        if (!wrong.empty())
          throw Error(ErrorKind::cuda,
                      "all_reduce: " + std::string(to_string(rung)) + " " + cudalab::to_string(dtype) + " " +
                          format_bytes(static_cast<double>(bytes)) + ": " + wrong,
                      __FILE__, __LINE__);
        const harness::Summary t = timer.time([&](cudaStream_t s) { run_rung(rung, b, nccl, count, s); },
                                              b.gpu[0].stream.get(), copy_timing(scale));
        const double seconds = t.median * 1e-3;
        const double busbw = all_reduce_bus_gbps(static_cast<double>(bytes), seconds, gpus);
        if (rung == Rung::nccl) nccl_busbw[k] = busbw;
        rows.push_back({to_string(rung), cudalab::to_string(dtype), gpus, bytes, t.median * 1e3, t.min * 1e3,
                        static_cast<double>(bytes) / seconds / 1e9, busbw,
                        nccl_busbw[k] > 0 ? busbw / nccl_busbw[k] : 0.0,
                        context.ceilings.peer_gbps > 0 ? busbw / context.ceilings.peer_gbps : 0.0, t.count});
      }
    }
  }
  notes.push_back(
      "median_us, min_us: CUDA events on GPU 0's stream around one all-reduce; every GPU's stream forks from it "
      "and joins it through events; samples until a 2% spread or a time budget ends");
  notes.push_back(
      "algbw_gbps: bytes of one GPU's array over the time; busbw_gbps: algbw x 2 (gpus - 1) / gpus, nccl-tests' "
      "bus bandwidth; of_nccl_busbw: over NCCL's at the same dtype and size (0 where NCCL did not run); "
      "of_peer_copy: over the probe's one-way cudaMemcpyPeerAsync rate, the roofline of a GPU's sends (0 where the "
      "probe has no peer ceiling)");
  notes.push_back("host_staged: at most " + format_bytes(static_cast<double>(kStagedLargestBytes)) +
                  " an array (one CPU thread sums)");
  notes.push_back("flags: at most " + format_bytes(static_cast<double>(kFlagsLargestBytes)) +
                  " an array; its time includes copying each input into its output (the kernel works in place); "
                  "two-shot from " +
                  format_bytes(static_cast<double>(kAllReduceTwoShotBytes)) + " on three GPUs or more");
  notes.push_back(
      "every rung at every size was first run into outputs of NaN and every element of every GPU compared with the "
      "exact sum of the stored inputs, within gpus + 1 roundings of the sum of their magnitudes");
  return result;
}

}  // namespace

harness::Experiment all_reduce_experiment() {
  return {"all_reduce",
          "transfers",
          "All-reduce over the GPUs of one host, f32 and bf16, 8 KiB..1 GiB: staged through the host, a ring of "
          "peer copies, the ring pulling with kernels, one-shot and two-shot kernels over peer access, one launch a "
          "GPU meeting at flags, NCCL",
          run_all_reduce,
          nlohmann::json::array({{{"title", "All-reduce bus bandwidth by rung"},
                                  {"x", "bytes"},
                                  {"y", "busbw_gbps"},
                                  {"series", {"rung", "dtype"}},
                                  {"x_log", true},
                                  {"y_log", true},
                                  {"y_label", "bus GB/s"}},
                                 {{"title", "All-reduce time by rung"},
                                  {"x", "bytes"},
                                  {"y", "median_us"},
                                  {"series", {"rung", "dtype"}},
                                  {"x_log", true},
                                  {"y_log", true},
                                  {"y_label", "us (median)"}}}),
          "the elements of each GPU's array, the same count in f32 and bf16 (default: 8 KiB, 32 KiB, ... 1 GiB an "
          "array)"};
}

}  // namespace cudalab::transfers
