// Coalescing sweeps (claims C05, C06): a copy whose start is shifted by 0..32 floats, a copy
// whose threads stride 1..64 floats apart, and a gather through random indices. Each kernel's
// output is checked on the host against the input before its point is timed.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/format.hpp"
#include "core/launch.cuh"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/memory/experiment_support.hpp"

namespace cudalab::harness::memory_experiments {
namespace {

// 512 MiB per buffer: ten times the H100's L2, so every point streams from DRAM.
constexpr std::int64_t kElements = std::int64_t{1} << 27;
constexpr int kMaxOffset = 32;
constexpr int kBlock = 256;

// The Best Practices Guide's offset copy: thread i moves element i + offset, so for offset != 0
// every warp's 128 bytes straddle two 128-byte lines (five 32-byte sectors instead of four).
__global__ void offset_copy_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t n, int offset) {
  const std::int64_t i = global_thread_index();
  if (i < n) out[i + offset] = in[i + offset];
}

// Its strided copy: thread i moves element i * stride; from stride 8 on every element costs a
// 32-byte sector of its own on the read and on the write.
__global__ void strided_copy_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t n, int stride) {
  const std::int64_t i = global_thread_index();
  if (i < n) out[i * stride] = in[i * stride];
}

__host__ __device__ std::uint32_t gather_index(std::uint64_t seed, std::int64_t i, std::int64_t span, bool random) {
  return static_cast<std::uint32_t>(random ? mix64(seed ^ static_cast<std::uint64_t>(i)) % span : i % span);
}

__global__ void gather_index_kernel(std::uint32_t* index, std::int64_t n, std::int64_t span, std::uint64_t seed,
                                    bool random) {
  const std::int64_t i = global_thread_index();
  if (i < n) index[i] = gather_index(seed, i, span, random);
}

__global__ void gather_kernel(const float* __restrict__ in, const std::uint32_t* __restrict__ index,
                              float* __restrict__ out, std::int64_t n) {
  const std::int64_t i = global_thread_index();
  if (i < n) out[i] = in[index[i]];
}

unsigned blocks_for(std::int64_t n) { return static_cast<unsigned>(ceil_div<std::int64_t>(n, kBlock)); }

// Device input and output of kElements floats, and pinned host copies for the checks.
struct CopyBuffers {
  explicit CopyBuffers(std::uint64_t seed) : in(kElements), out(kElements), host_in(kElements), host_out(kElements) {
    fill_random(in.data(), kElements, seed, Distribution::uniform, stream.get());
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_in.data(), in.data(), in.bytes(), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
  }
  // Poisons the output, runs `launch` once and copies the output back.
  template <typename Launch>
  void run_once(Launch launch) {
    poison(out.data(), out.bytes(), stream.get());
    launch(stream.get());
    CUDALAB_CUDA_CHECK(cudaGetLastError());
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_out.data(), out.data(), out.bytes(), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
  }
  Stream stream;
  KernelTimer timer;
  DeviceBuffer<float> in, out;
  PinnedBuffer<float> host_in, host_out;
};

nlohmann::json run_offset(const ExperimentContext& context) {
  CopyBuffers b(context.seed);
  const std::int64_t n = kElements - kMaxOffset;
  const double bytes = 8.0 * static_cast<double>(n);
  nlohmann::json rows = nlohmann::json::array();
  double aligned_gbps = 0;
  for (int offset = 0; offset <= kMaxOffset; ++offset) {
    auto launch = [&](cudaStream_t s) {
      offset_copy_kernel<<<blocks_for(n), kBlock, 0, s>>>(b.in.data(), b.out.data(), n, offset);
    };
    b.run_once(launch);
    if (std::memcmp(b.host_out.data() + offset, b.host_in.data() + offset, n * sizeof(float)) != 0)
      data_check_failed("coalescing_offset", "offset " + std::to_string(offset) + ": output differs from input");
    if (context.progress) context.progress("coalescing_offset " + std::to_string(offset));
    const Summary t = b.timer.time(launch, b.stream.get(), sweep_timing());
    const double rate = gbps(bytes, t.median);
    if (offset == 0) aligned_gbps = rate;
    rows.push_back(
        {offset, t.median * 1e3, rate, 100.0 * rate / context.ceilings.copy_gbps(), 100.0 * rate / aligned_gbps});
  }
  return {{"name", "coalescing_offset"},
          {"op", "memory"},
          {"summary", "copy of 2^27 - 32 floats starting `offset` floats into the buffers (claim C06)"},
          {"columns", {"offset", "median_us", "gbps", "pct_of_copy", "pct_of_offset_0"}},
          {"rows", rows},
          {"notes",
           {"one float per thread, 256-thread blocks; gbps counts bytes read + bytes written; L2 flushed before each "
            "sample",
            "pct_of_copy: against the probe's copy rate (" + format_fixed(context.ceilings.copy_gbps(), 1) + " GB/s)",
            "every offset's output is compared bit for bit with its input before timing"}}};
}

nlohmann::json run_stride(const ExperimentContext& context) {
  CopyBuffers b(context.seed);
  nlohmann::json rows = nlohmann::json::array();
  double unit_gbps = 0;
  for (int stride : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64}) {
    const std::int64_t n = kElements / stride;
    auto launch = [&](cudaStream_t s) {
      strided_copy_kernel<<<blocks_for(n), kBlock, 0, s>>>(b.in.data(), b.out.data(), n, stride);
    };
    b.run_once(launch);
    for (std::int64_t i = 0; i < n; ++i)
      if (std::memcmp(&b.host_out.data()[i * stride], &b.host_in.data()[i * stride], sizeof(float)) != 0)
        data_check_failed("coalescing_stride", "stride " + std::to_string(stride) + ": element " +
                                                   std::to_string(i * stride) + " not copied");
    if (context.progress) context.progress("coalescing_stride " + std::to_string(stride));
    const Summary t = b.timer.time(launch, b.stream.get(), sweep_timing());
    const double rate = gbps(8.0 * static_cast<double>(n), t.median);
    if (stride == 1) unit_gbps = rate;
    // 32-byte sectors: a warp's request fetches min(stride, 8) times the bytes it uses.
    const double sector_model = 100.0 / (stride < 8 ? stride : 8);
    rows.push_back({stride, n, t.median * 1e3, rate, 100.0 * rate / context.ceilings.copy_gbps(),
                    100.0 * rate / unit_gbps, sector_model});
  }
  return {{"name", "coalescing_stride"},
          {"op", "memory"},
          {"summary", "copy of every stride-th float of 2^27 (claim C05)"},
          {"columns",
           {"stride", "elements", "median_us", "effective_gbps", "pct_of_copy", "pct_of_stride_1", "sector_model_pct"}},
          {"rows", rows},
          {"notes",
           {"effective_gbps: the bytes the copy uses (4 read + 4 written per element) over the median time",
            "sector_model_pct: 100 / min(stride, 8), what the bandwidth would be if every 32-byte sector touched "
            "cost a full sector of DRAM traffic and nothing else mattered",
            "every copied element is compared bit for bit with its source before timing"}}};
}

nlohmann::json run_gather(const ExperimentContext& context) {
  constexpr std::int64_t kGathered = std::int64_t{1} << 25;
  CopyBuffers b(context.seed);
  DeviceBuffer<std::uint32_t> index(kGathered);
  nlohmann::json rows = nlohmann::json::array();
  double sequential_ms = 0;
  // Spans: the whole 512 MiB input (DRAM), and 4 MiB (the gathered values sit in L2).
  for (std::int64_t span : {kElements, std::int64_t{1} << 20}) {
    for (bool random : {false, true}) {
      gather_index_kernel<<<blocks_for(kGathered), kBlock, 0, b.stream.get()>>>(index.data(), kGathered, span,
                                                                                context.seed, random);
      auto launch = [&](cudaStream_t s) {
        gather_kernel<<<blocks_for(kGathered), kBlock, 0, s>>>(b.in.data(), index.data(), b.out.data(), kGathered);
      };
      b.run_once(launch);
      for (std::int64_t i = 0; i < kGathered; ++i)
        if (std::memcmp(&b.host_out.data()[i], &b.host_in.data()[gather_index(context.seed, i, span, random)],
                        sizeof(float)) != 0)
          data_check_failed("gather_random", "element " + std::to_string(i) + " differs from the host gather");
      const std::string pattern = random ? "random" : "sequential";
      if (context.progress) context.progress("gather_random " + pattern);
      const Summary t = b.timer.time(launch, b.stream.get(), sweep_timing());
      if (span == kElements && !random) sequential_ms = t.median;
      const double rate = gbps(12.0 * static_cast<double>(kGathered), t.median);
      rows.push_back({pattern, static_cast<double>(span) * 4.0, t.median * 1e3, rate,
                      100.0 * rate / context.ceilings.copy_gbps(), 100.0 * sequential_ms / t.median});
    }
  }
  return {{"name", "gather_random"},
          {"op", "memory"},
          {"summary", "out[i] = in[index[i]] for 2^25 elements, sequential or random indices (claim C05)"},
          {"columns", {"pattern", "span_bytes", "median_us", "effective_gbps", "pct_of_copy", "pct_of_sequential"}},
          {"rows", rows},
          {"notes",
           {"effective_gbps: 12 bytes per element (index read, value read, value written) over the median time",
            "span_bytes: the part of the input the indices fall in; pct_of_sequential: against the sequential "
            "gather over the whole input",
            "random indices: splitmix64 of (seed, i) modulo the span; the output is compared with a host gather"}}};
}

// Fraction (%) of the stride-1 copy at `stride`, or a negative number when absent.
double stride_pct(const nlohmann::json& table, int stride) {
  for (const auto& row : table["rows"])
    if (row[0].get<int>() == stride) return row[5].get<double>();
  return -1;
}

bool near(double measured, double claimed) { return measured >= claimed / 1.5 && measured <= claimed * 1.5; }

// C05: stride 2 ~50% of sequential bandwidth, stride 4 ~24%, stride 32 ~3%, random ~3%.
nlohmann::json claim_c05(const nlohmann::json& results) {
  const auto* strides = experiment(results, "coalescing_stride");
  const auto* gather = experiment(results, "gather_random");
  if (strides == nullptr || gather == nullptr) return nullptr;
  double random_pct = -1;
  for (const auto& row : (*gather)["rows"])
    if (row[0] == "random" && row[1].get<double>() >= 1e8) random_pct = row[5].get<double>();
  const double s2 = stride_pct(*strides, 2), s4 = stride_pct(*strides, 4), s32 = stride_pct(*strides, 32);
  if (s2 < 0 || s4 < 0 || s32 < 0 || random_pct < 0) return nullptr;
  const int matches = near(s2, 50) + near(s4, 24) + near(s32, 3) + near(random_pct, 3);
  std::string outcome = matches == 4 ? "holds"
                        : matches >= 2
                            ? "holds partly: within 1.5x of the claim at " + std::to_string(matches) + " of 4 points"
                            : "does not hold";
  if (s32 > 6) outcome += "; past stride 8 the cost is one 32-byte sector per element, not a 128-byte line";
  return verdict("C05",
                 "Strided reads: stride 2 ~50% of sequential bandwidth, stride 4 ~24%, stride 32 ~3%, random ~3%",
                 "seeds 000, 001", "50% / 24% / 3% / 3%",
                 "stride 2 " + format_fixed(s2, 1) + "%, stride 4 " + format_fixed(s4, 1) + "%, stride 32 " +
                     format_fixed(s32, 1) + "%, random gather " + format_fixed(random_pct, 1) + "%",
                 s32 / 3.0, outcome);
}

// C06: a misaligned copy reaches about 4/5 of the aligned copy's throughput.
nlohmann::json claim_c06(const nlohmann::json& results) {
  const auto* table = experiment(results, "coalescing_offset");
  if (table == nullptr) return nullptr;
  double worst = 1e9, sum = 0;
  int count = 0;
  for (const auto& row : (*table)["rows"]) {
    const int offset = row[0].get<int>();
    if (offset % 32 == 0) continue;  // offsets 0 and 32 are aligned to a 128-byte line
    worst = std::min(worst, row[4].get<double>());
    sum += row[4].get<double>();
    ++count;
  }
  if (count == 0) return nullptr;
  const double mean = sum / count;
  const std::string outcome = mean >= 70 && mean <= 90 ? "holds"
                              : mean > 90 ? "does not hold: misalignment costs " + format_fixed(100 - mean, 1) +
                                                "%, far less than a fifth (the extra sector per warp is mostly "
                                                "served by the neighbouring warp's fetch)"
                                          : "does not hold: misalignment costs more than a fifth";
  return verdict(
      "C06", "A misaligned (offset) copy reaches about 4/5 of the aligned copy's throughput", "seed 001",
      "~80% of the aligned copy",
      "offsets 1..31: mean " + format_fixed(mean, 1) + "%, worst " + format_fixed(worst, 1) + "% of the offset-0 copy",
      mean / 80.0, outcome);
}

}  // namespace

void register_coalescing(Registry& registry) {
  registry.add(Experiment{"coalescing_offset", "memory", "copy starting 0..32 floats off alignment (claim C06)",
                          run_offset,
                          nlohmann::json::array({{{"title", "Offset copy: bandwidth against the start offset"},
                                                  {"x", "offset"},
                                                  {"y", "pct_of_copy"},
                                                  {"y_label", "% of the measured copy rate"}}})});
  registry.add(Experiment{"coalescing_stride", "memory", "copy with threads 1..64 floats apart (claim C05)", run_stride,
                          nlohmann::json::array({{{"title", "Strided copy: effective bandwidth against the stride"},
                                                  {"x", "stride"},
                                                  {"y", "pct_of_stride_1"},
                                                  {"x_log", true},
                                                  {"y_log", true},
                                                  {"y_label", "% of the stride-1 copy"}}})});
  registry.add(
      Experiment{"gather_random", "memory", "gather through sequential and random indices (claim C05)", run_gather,
                 bar_plot("Gather: sequential vs random indices", nlohmann::json::array({"pattern", "span_bytes"}),
                          "pct_of_copy", "% of the measured copy rate")});
  registry.add(ClaimCheck{"C05", "memory", {}, claim_c05});
  registry.add(ClaimCheck{"C06", "memory", {}, claim_c06});
}

}  // namespace cudalab::harness::memory_experiments
