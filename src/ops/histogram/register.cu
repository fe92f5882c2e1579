// The histogram op: counts of integer samples, one bin per value over [0, bins). Two combinations
// are benched: byte samples into 256 bins, and 16-bit samples into 4096 bins (the wider case,
// where a sub-histogram is 16 KiB and per-lane counters no longer fit). Each is timed on uniform
// input and on all-one-value input, the worst case for contention.
#include <algorithm>
#include <thread>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/histogram.hpp"
#include "harness/registry.hpp"
#include "ops/histogram/ids.hpp"
#include "ops/histogram/reference.hpp"
#include "ops/histogram/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = histogram_ids;
namespace v = histogram_variants;

constexpr int kWideBins = 4096;
static_assert(kWideBins <= v::kMaxSharedBins, "the 16-bit problems run every shared-memory variant");

int bins_of(const Problem& p) { return static_cast<int>(p.param(ids::kBins)); }

// 16-bit keys in [0, bins), following random_byte's distributions: all_equal puts every key in
// bin 7 (bin 0 when there are fewer than 8), sorted rises from 0 to bins - 1, everything else is
// uniform. fill_random's u16 stream covers the whole 16-bit range instead, which would leave
// most samples outside the bins.
__global__ void histogram_wide_keys_kernel(std::uint16_t* keys, std::int64_t n, std::uint64_t seed,
                                           Distribution distribution, int bins) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) {
    std::uint64_t key = 0;
    switch (distribution) {
      case Distribution::all_equal: key = bins > 7 ? 7 : 0; break;
      case Distribution::sorted: key = n > 1 ? static_cast<std::uint64_t>(bins - 1) * i / (n - 1) : 0; break;
      default: key = (mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) >> 32) * bins >> 32; break;
    }
    keys[i] = static_cast<std::uint16_t>(key);
  }
}

// The samples' fill: bytes take fill_random's byte stream (every byte has a bin), 16-bit samples
// the keys below the problem's bin count.
void fill_samples(void* device, std::int64_t n, std::uint64_t seed, Distribution distribution, const Problem& problem,
                  cudaStream_t stream) {
  if (problem.dtype != DType::u16) {
    fill_random(problem.dtype, device, n, seed, distribution, stream);
    return;
  }
  if (n == 0) return;
  constexpr int kBlockSize = 256;
  const int blocks = resident_grid_size(histogram_wide_keys_kernel, kBlockSize, n);
  histogram_wide_keys_kernel<<<blocks, kBlockSize, 0, stream>>>(static_cast<std::uint16_t*>(device), n, seed,
                                                                distribution, bins_of(problem));
  CUDALAB_CHECK_LAUNCH();
}

struct HistogramBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.samples = tensors.data<T>("samples");
    args.n = problem.dim("n");
    args.counts = tensors.data<std::uint32_t>("counts");
    args.bins = bins_of(problem);
    args.workspace = tensors.workspace();
    args.workspace_bytes = tensors.workspace_bytes();
    return args;
  }
};

// Empty when a kernel holding at most `max_wide_bins` counters takes the problem's bins: byte
// samples always have 256 bins, 16-bit samples 1 to max_wide_bins.
std::string bins_unsupported(const Problem& p, int max_wide_bins) {
  const int bins = bins_of(p);
  if (p.dtype == DType::u8 && bins != kByteHistogramBins)
    return "byte samples are counted into 256 bins, got bins=" + std::to_string(bins);
  if (p.dtype == DType::u16 && (bins < 1 || bins > max_wide_bins))
    return "16-bit samples take 1 to " + std::to_string(max_wide_bins) + " bins here, got bins=" + std::to_string(bins);
  return "";
}

template <typename... Args>
Variant variant(const char* id, const char* technique, Role role, int max_wide_bins,
                void (*... launchers)(const Args&, cudaStream_t)) {
  Variant v = make_variant<HistogramBinding>(id, technique, role, launchers...);
  v.can_implement = [max_wide_bins](const DeviceInfo&, const Problem& p) { return bins_unsupported(p, max_wide_bins); };
  return v;
}

Variant cub_variant() {
  Variant v = variant(ids::kCub, "cub::DeviceHistogram::HistogramEven (CCCL), the library baseline", Role::baseline,
                      kMaxHistogramBins, v::cub_histogram<std::uint8_t>, v::cub_histogram<std::uint16_t>);
  // CUB's own size query, for the sample type, count and bins of the problem.
  v.workspace_bytes = [](const Problem& p) -> std::size_t {
    if (!bins_unsupported(p, kMaxHistogramBins).empty()) return 0;
    const std::int64_t n = p.dim("n");
    return p.dtype == DType::u8 ? v::cub_histogram_workspace_bytes<std::uint8_t>(n, bins_of(p))
                                : v::cub_histogram_workspace_bytes<std::uint16_t>(n, bins_of(p));
  };
  return v;
}

// Exact counts: the reference counts in 64 bits, and a test's counts stay below 2^32.
Comparison check_histogram(const CheckContext& c) {
  const Tensor& samples = c.tensors["samples"];
  const int bins = bins_of(c.problem);
  const std::vector<std::uint64_t> reference =
      c.problem.dtype == DType::u8 ? reference_histogram(samples.host_as<std::uint8_t>(), samples.count(), bins)
                                   : reference_histogram(samples.host_as<std::uint16_t>(), samples.count(), bins);
  return compare_tensor(c.tensors["counts"], Tolerance::exact(),
                        [&reference](std::int64_t b) { return static_cast<double>(reference[b]); });
}

}  // namespace

void register_histogram(Registry& registry) {
  Op op;
  op.name = ids::kOp;
  op.summary = "counts of integer samples, one bin per value over [0, bins), uint32 counts";
  op.dim_names = {"n"};
  op.dtypes = {DType::u8, DType::u16};
  op.params = {{ids::kBins, kByteHistogramBins}};
  op.tensors = {
      {"samples", TensorRole::input, {}, [](const Problem& p) { return p.dim("n"); }, fill_samples},
      {"counts", TensorRole::output, DType::u32, [](const Problem& p) -> std::int64_t { return bins_of(p); }}};
  const std::vector<Param> bytes = {{ids::kBins, kByteHistogramBins}};
  const std::vector<Param> wide = {{ids::kBins, kWideBins}};
  const std::vector<std::vector<std::int64_t>> bench_sizes = {{1 << 20}, {1 << 28}};
  op.bench_problems = cross(op, bench_sizes, {DType::u8}, bytes);
  for (const Problem& p : cross(op, bench_sizes, {DType::u16}, wide)) op.bench_problems.push_back(p);
  op.bench_distributions = {Distribution::uniform, Distribution::all_equal};
  // n = 0 (every bin 0), a warp's worth either side, a prime that is no multiple of 16 (head,
  // vectors and tail all present) and 2^28 samples for the large sizes.
  const std::vector<std::vector<std::int64_t>> test_sizes = {{0},  {1},       {31},      {32},
                                                             {33}, {1000003}, {1 << 24}, {1 << 28}};
  op.test_problems = cross(op, test_sizes, {DType::u8}, bytes);
  for (const Problem& p : cross(op, test_sizes, {DType::u16}, wide)) op.test_problems.push_back(p);
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("n"));
    return Work{static_cast<double>(size_of(p.dtype)) * n,
                static_cast<double>(size_of(DType::u32)) * static_cast<double>(bins_of(p)), 0};
  };
  op.check = check_histogram;
  // The reference's 64-bit counts: one array per host thread, and the result.
  op.check_host_bytes = [](const Problem& p) {
    const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
    return static_cast<std::size_t>(bins_of(p)) * sizeof(std::uint64_t) * (threads + 1);
  };
  op.variants = {
      variant(ids::kGlobalAtomics, "one global atomicAdd per sample", Role::ladder, kMaxHistogramBins,
              v::global_atomics<std::uint8_t>, v::global_atomics<std::uint16_t>),
      variant(ids::kSharedPrivatized,
              "one shared-memory histogram per block (1 KiB for bytes, 16 KiB for 4096 bins), merged with global "
              "atomics",
              Role::ladder, v::kMaxSharedBins, v::shared_privatized<std::uint8_t>, v::shared_privatized<std::uint16_t>),
      variant(ids::kSubHistograms,
              "the tutorial's hint: shared sub-histograms, one per warp for bytes, two per block (even and odd "
              "warps) for 4096 bins",
              Role::ladder, v::kMaxSharedBins, v::sub_histograms<std::uint8_t>, v::sub_histograms<std::uint16_t>),
      variant(ids::kWarpAggregated, "sub-histograms; __match_any_sync, one lane adds its group's count", Role::ladder,
              v::kMaxSharedBins, v::warp_aggregated<std::uint8_t>, v::warp_aggregated<std::uint16_t>),
      variant(ids::kVectorized, "sub-histograms fed by 16-byte loads of 16 bytes or 8 16-bit samples", Role::ladder,
              v::kMaxSharedBins, v::vectorized<std::uint8_t>, v::vectorized<std::uint16_t>),
      variant(ids::kLaneColumns,
              "bytes only: 16-byte loads; a private column of packed 16-bit counters per lane, bank-conflict-free",
              Role::ladder, v::kMaxSharedBins, v::lane_columns),
      cub_variant(),
  };
  registry.add(std::move(op));
}

}  // namespace cudalab::harness
