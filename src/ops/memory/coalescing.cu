// Coalescing sweeps (claims C05, C06): a copy whose start is shifted by 0..32 floats, a copy
// whose threads stride 1..64 floats apart, and a gather through random indices. Each kernel's
// output is checked on the host against the input before its point is timed.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/launch.cuh"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/experiment_support.hpp"
#include "harness/registry.hpp"

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

// The column called `name` of an experiment table, or -1.
int column_of(const nlohmann::json& table, const std::string& name) {
  const auto& columns = table["columns"];
  for (std::size_t c = 0; c < columns.size(); ++c)
    if (columns[c] == name) return static_cast<int>(c);
  return -1;
}

// The stride-`stride` copy's bandwidth as a fraction of the stride-1 copy's, or -1 when absent.
double stride_fraction(const nlohmann::json& table, int stride) {
  const int pct = column_of(table, "pct_of_stride_1");
  if (pct < 0) return -1;
  for (const auto& row : table["rows"])
    if (row[0].get<int>() == stride) return row[pct].get<double>() / 100;
  return -1;
}

// C05: stride 2 ~50% of sequential bandwidth, stride 4 ~24%, stride 32 ~3%, random ~3%. One
// fraction part per stride and one for random indices over the whole 512 MiB input (DRAM), each
// against the sequential access of its own experiment.
nlohmann::json claim_c05(const nlohmann::json& results) {
  const auto* strides = experiment(results, "coalescing_stride");
  const auto* gather = experiment(results, "gather_random");
  if (strides == nullptr || gather == nullptr) return nullptr;
  const int span = column_of(*gather, "span_bytes"), pct = column_of(*gather, "pct_of_sequential");
  if (span < 0 || pct < 0) return nullptr;
  double random = -1, widest = 0;
  for (const auto& row : (*gather)["rows"])
    if (row[0] == "random" && row[span].get<double>() > widest) {
      widest = row[span].get<double>();
      random = row[pct].get<double>() / 100;
    }
  const double s2 = stride_fraction(*strides, 2), s4 = stride_fraction(*strides, 4),
               s32 = stride_fraction(*strides, 32);
  if (s2 <= 0 || s4 <= 0 || s32 <= 0 || random <= 0) return nullptr;
  auto pct_text = [](double fraction) { return format_fixed(100 * fraction, 1) + "%"; };
  const std::string measured = "strided copy of 2^27 floats: stride 2 " + pct_text(s2) + ", stride 4 " + pct_text(s4) +
                               ", stride 32 " + pct_text(s32) +
                               " of the stride-1 copy; gather through random indices over " + format_bytes(widest) +
                               ": " + pct_text(random) + " of the sequential gather";
  return claim_verdict(
      "C05", "fractions of sequential bandwidth: stride 2 0.50, stride 4 0.24, stride 32 0.03, random 0.03", measured,
      {judge_ratio("stride 2: 50% of sequential", 0.50, s2), judge_ratio("stride 4: 24% of sequential", 0.24, s4),
       judge_ratio("stride 32: 3% of sequential", 0.03, s32), judge_ratio("random: 3% of sequential", 0.03, random)});
}

// C06: a misaligned copy reaches about 4/5 of the aligned copy's throughput: a fraction part
// (0.8), measured as the mean over the offsets 1..31 floats of the offset-0 copy's rate.
nlohmann::json claim_c06(const nlohmann::json& results) {
  const auto* table = experiment(results, "coalescing_offset");
  if (table == nullptr) return nullptr;
  const int pct = column_of(*table, "pct_of_offset_0");
  if (pct < 0) return nullptr;
  double worst = 1e9, sum = 0;
  int count = 0;
  for (const auto& row : (*table)["rows"]) {
    const int offset = row[0].get<int>();
    if (offset % 32 == 0) continue;  // offsets 0 and 32 are aligned to a 128-byte line
    worst = std::min(worst, row[pct].get<double>());
    sum += row[pct].get<double>();
    ++count;
  }
  if (count == 0) return nullptr;
  const double mean = sum / count / 100;
  return claim_verdict("C06", "a misaligned copy at 0.8 of the aligned copy's throughput",
                       "offsets 1..31 floats: mean " + format_fixed(100 * mean, 1) + "%, worst " +
                           format_fixed(worst, 1) +
                           "% of the offset-0 copy (the extra sector per warp is mostly served by the neighbouring "
                           "warp's fetch)",
                       {judge_ratio("misaligned copy: 4/5 of aligned", 0.8, mean)});
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
                                                  {"y_label", "% of the stride-1 copy"},
                                                  {"predicted", predicted_points("tutorials 000, 001 (C05)",
                                                                                 {{2, 50}, {4, 24}, {32, 3}})}}})});
  registry.add(
      Experiment{"gather_random", "memory", "gather through sequential and random indices (claim C05)", run_gather,
                 bar_plot("Gather: sequential vs random indices", nlohmann::json::array({"pattern", "span_bytes"}),
                          "pct_of_copy", "% of the measured copy rate")});
  registry.add(ClaimCheck{"C05", "memory", {}, claim_c05});
  registry.add(ClaimCheck{"C06", "memory", {}, claim_c06});
}

}  // namespace cudalab::harness::memory_experiments
