// Registry entries for the histograms: byte samples into 256 bins, and 16-bit samples into 4096
// bins (the wider case, where a sub-histogram is 16 KiB and per-lane counters no longer fit).
// Each is timed on uniform input and on all-one-value input, the worst case for contention.
#include <memory>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/histogram.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "ops/histogram/reference.hpp"
#include "ops/histogram/variants.hpp"

namespace cudalab::harness {
namespace {

constexpr int kWideBins = 4096;
static_assert(kWideBins <= histogram_variants::kMaxSharedBins, "the wide op runs every shared-memory variant");

// 16-bit keys in [0, kWideBins), following random_byte's distributions: all_equal puts every key
// in bin 7, sorted rises from 0 to kWideBins - 1, everything else is uniform.
__global__ void histogram_wide_keys_kernel(std::uint16_t* keys, std::int64_t n, std::uint64_t seed,
                                           Distribution distribution) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) {
    std::uint64_t key = 0;
    switch (distribution) {
      case Distribution::all_equal: key = 7; break;
      case Distribution::sorted: key = n > 1 ? (kWideBins - 1) * i / (n - 1) : 0; break;
      default: key = (mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) >> 32) * kWideBins >> 32; break;
    }
    keys[i] = static_cast<std::uint16_t>(key);
  }
}

void fill_samples(std::uint8_t* samples, std::int64_t n, std::uint64_t seed, Distribution distribution,
                  cudaStream_t stream) {
  fill_random(samples, n, seed, distribution, stream);
}

void fill_samples(std::uint16_t* samples, std::int64_t n, std::uint64_t seed, Distribution distribution,
                  cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kBlockSize = 256;
  const int blocks = resident_grid_size(histogram_wide_keys_kernel, kBlockSize, n);
  histogram_wide_keys_kernel<<<blocks, kBlockSize, 0, stream>>>(samples, n, seed, distribution);
  CUDALAB_CHECK_LAUNCH();
}

std::size_t cub_temp_bytes(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, int) {
  return histogram_variants::cub_histogram_temp_bytes(samples, n, counts);
}

std::size_t cub_temp_bytes(const std::uint16_t* samples, std::int64_t n, std::uint32_t* counts, int bins) {
  return histogram_variants::cub_histogram_temp_bytes(samples, n, counts, bins);
}

template <typename Key>
class HistogramWorkload final : public Workload {
 public:
  HistogramWorkload(std::int64_t n, int bins)
      : n_(n),
        bins_(bins),
        samples_(n),
        counts_(bins),
        host_samples_(new Key[n]),
        host_counts_(new std::uint32_t[bins]) {
    // CUB's temporary storage is allocated here, once, so a timed launch is the histogram only.
    cub_temp_ = DeviceBuffer<unsigned char>(
        static_cast<std::int64_t>(cub_temp_bytes(samples_.data(), n_, counts_.data(), bins_)));
  }

  void generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream) override {
    fill_samples(samples_.data(), n_, seed, distribution, stream);
    if (n_ > 0)
      CUDALAB_CUDA_CHECK(
          cudaMemcpyAsync(host_samples_.get(), samples_.data(), samples_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  void poison(cudaStream_t stream) override {
    harness::poison(counts_.data(), counts_.bytes(), stream, kIntegerPoisonByte);
  }

  Comparison check(cudaStream_t stream) override {
    CUDALAB_CUDA_CHECK(
        cudaMemcpyAsync(host_counts_.get(), counts_.data(), counts_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<std::uint64_t> reference = reference_histogram(host_samples_.get(), n_, bins_);
    return compare_values(
        host_counts_.get(), bins_, Tolerance::exact(),
        [&reference](std::int64_t b) { return static_cast<double>(reference[b]); }, kIntegerPoisonByte);
  }

  const Key* samples() const { return samples_.data(); }
  std::int64_t n() const { return n_; }
  std::uint32_t* counts() const { return counts_.data(); }
  int bins() const { return bins_; }
  void* cub_temp() const { return cub_temp_.data(); }
  std::size_t cub_temp_size() const { return cub_temp_.bytes(); }

 private:
  std::int64_t n_;
  int bins_;
  DeviceBuffer<Key> samples_;
  DeviceBuffer<std::uint32_t> counts_;
  DeviceBuffer<unsigned char> cub_temp_;
  // Left uninitialised: each is overwritten by a copy before it is read.
  std::unique_ptr<Key[]> host_samples_;
  std::unique_ptr<std::uint32_t[]> host_counts_;
};

using ByteWorkload = HistogramWorkload<std::uint8_t>;
using WideWorkload = HistogramWorkload<std::uint16_t>;
using ByteLauncher = void (*)(const std::uint8_t*, std::int64_t, std::uint32_t*, cudaStream_t);
using WideLauncher = void (*)(const std::uint16_t*, std::int64_t, std::uint32_t*, int, cudaStream_t);

Variant variant(std::string id, std::string technique, Role role, std::function<void(Workload&, cudaStream_t)> launch) {
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.role = role;
  v.launch = std::move(launch);
  return v;
}

Variant byte_ladder(std::string id, std::string technique, ByteLauncher launcher) {
  return variant(std::move(id), std::move(technique), Role::ladder, [launcher](Workload& w, cudaStream_t s) {
    const auto& h = static_cast<ByteWorkload&>(w);
    launcher(h.samples(), h.n(), h.counts(), s);
  });
}

Variant wide_ladder(std::string id, std::string technique, WideLauncher launcher) {
  return variant(std::move(id), std::move(technique), Role::ladder, [launcher](Workload& w, cudaStream_t s) {
    const auto& h = static_cast<WideWorkload&>(w);
    launcher(h.samples(), h.n(), h.counts(), h.bins(), s);
  });
}

const char* const kCubTechnique = "cub::DeviceHistogram::HistogramEven (CCCL), the library baseline";

Variant byte_cub() {
  return variant("cub", kCubTechnique, Role::baseline, [](Workload& w, cudaStream_t s) {
    const auto& h = static_cast<ByteWorkload&>(w);
    histogram_variants::cub_histogram(h.samples(), h.n(), h.counts(), h.cub_temp(), h.cub_temp_size(), s);
  });
}

Variant wide_cub() {
  return variant("cub", kCubTechnique, Role::baseline, [](Workload& w, cudaStream_t s) {
    const auto& h = static_cast<WideWorkload&>(w);
    histogram_variants::cub_histogram(h.samples(), h.n(), h.counts(), h.bins(), h.cub_temp(), h.cub_temp_size(), s);
  });
}

// What the two ops share: sizes, distributions, the work model, memory and the workload.
template <typename Key>
Op histogram_op(std::string name, std::string summary, int bins) {
  Op op;
  op.name = std::move(name);
  op.summary = std::move(summary);
  op.bench_problems = {{1 << 20}, {1 << 28}};
  op.bench_distributions = {Distribution::uniform, Distribution::all_equal};
  // n = 0 (every bin 0), a warp's worth either side, a prime that is no multiple of 16 (head,
  // vectors and tail all present) and 2^28 samples for the large sizes.
  op.test_problems = {{0}, {1}, {31}, {32}, {33}, {1000003}, {1 << 24}, {1 << 28}};
  op.work = [bins](const Problem& p) {
    Work w;
    w.bytes_read = static_cast<double>(sizeof(Key)) * static_cast<double>(p.n);
    w.bytes_written = 4.0 * bins;
    w.flops = 0;
    return w;
  };
  // CUB's temporary storage is a few KiB per bin set; 1 MiB covers it.
  op.device_bytes = [bins](const Problem& p) {
    return static_cast<std::size_t>(p.n) * sizeof(Key) + static_cast<std::size_t>(bins) * 4 + (std::size_t{1} << 20);
  };
  // Host copies of the samples and counts, and the reference's 64-bit counts per core.
  op.host_bytes = [bins](const Problem& p) {
    return static_cast<std::size_t>(p.n) * sizeof(Key) + static_cast<std::size_t>(bins) * (4 + 8 * 64);
  };
  op.make_workload = [bins](const Problem& p) { return std::make_unique<HistogramWorkload<Key>>(p.n, bins); };
  return op;
}

}  // namespace

void register_histogram(Registry& registry) {
  namespace v = histogram_variants;
  Op bytes = histogram_op<std::uint8_t>(
      "histogram_u8_256", "counts of the 256 byte values, uint8 samples, uint32 counts", kByteHistogramBins);
  bytes.variants = {
      byte_ladder("global_atomics", "one global atomicAdd per sample", v::global_atomics),
      byte_ladder("shared_privatized", "one shared-memory histogram per block, merged with global atomics",
                  v::shared_privatized),
      byte_ladder("sub_histograms", "seed 000: one shared sub-histogram per warp", v::sub_histograms),
      byte_ladder("warp_aggregated", "sub-histograms; __match_any_sync, one lane adds its group's count",
                  v::warp_aggregated),
      byte_ladder("vectorized", "sub-histograms per warp fed by 16-byte loads of 16 samples", v::vectorized),
      byte_ladder("lane_columns",
                  "16-byte loads; a private column of packed 16-bit counters per lane, bank-conflict-free",
                  v::lane_columns),
      byte_cub(),
  };
  registry.add(std::move(bytes));

  Op wide = histogram_op<std::uint16_t>(
      "histogram_u16_4096", "counts of 16-bit samples in 4096 bins over [0, 4096), uint32 counts", kWideBins);
  wide.variants = {
      wide_ladder("global_atomics", "one global atomicAdd per sample", v::global_atomics),
      wide_ladder("shared_privatized", "one 16 KiB shared-memory histogram per block, merged with global atomics",
                  v::shared_privatized),
      wide_ladder("sub_histograms", "seed 000: two shared sub-histograms per block, for even and odd warps",
                  v::sub_histograms),
      wide_ladder("warp_aggregated", "sub-histograms; __match_any_sync, one lane adds its group's count",
                  v::warp_aggregated),
      wide_ladder("vectorized", "sub-histograms fed by 16-byte loads of 8 samples", v::vectorized),
      wide_cub(),
  };
  registry.add(std::move(wide));
}

}  // namespace cudalab::harness
