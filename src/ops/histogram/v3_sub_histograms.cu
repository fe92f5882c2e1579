#include "core/warp.cuh"
#include "ops/histogram/block_histogram.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

constexpr int kBlockSize = 256;
constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;

// Copies sub-histograms of MaxBins counters per block; warp w adds to copy w % Copies. The
// tutorial's second hint, padding each copy to shift its banks, would only matter if lanes of one warp used
// different copies; here a warp's atomics all land in one copy, so there is nothing to shift.
template <typename Key, int MaxBins, int Copies>
__global__ void histogram_sub_histograms_kernel(const Key* __restrict__ samples, std::int64_t n, std::uint32_t* counts,
                                                int bins) {
  __shared__ std::uint32_t histograms[Copies * MaxBins];
  std::uint32_t* mine = histograms + (threadIdx.x / kWarpSize) % Copies * MaxBins;
  privatized_histogram(histograms, Copies, MaxBins, bins, counts, [&] {
    const std::int64_t stride = global_thread_count();
    for (std::int64_t i = global_thread_index(); i < n; i += stride) {
      const std::uint32_t key = samples[i];
      if (has_bin<Key>(key, bins)) atomicAdd(&mine[key], 1u);
    }
  });
}

template <typename Key, int MaxBins, int Copies>
void launch(const HistogramArgs<Key>& args, cudaStream_t stream) {
  static_assert(Copies >= 1 && Copies <= kWarpsPerBlock, "at most one copy per warp");
  static_assert(Copies * MaxBins * 4 <= 48 * 1024, "static shared memory is at most 48 KiB");
  require_bins<Key, MaxBins>(args.bins, "sub_histograms");
  zero_counts(args.counts, args.bins, stream);
  if (args.n == 0) return;
  const auto kernel = histogram_sub_histograms_kernel<Key, MaxBins, Copies>;
  const int blocks = resident_grid_size(kernel, kBlockSize, args.n);
  kernel<<<blocks, kBlockSize, 0, stream>>>(args.samples, args.n, args.counts, args.bins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

// Bytes: one 1 KiB copy per warp. 4096 bins: two 16 KiB copies per block (32 KiB), which still
// lets several blocks share an SM.
template <typename T>
void sub_histograms(const HistogramArgs<T>& args, cudaStream_t stream) {
  if constexpr (sizeof(T) == 1) {
    launch<T, kByteHistogramBins, kWarpsPerBlock>(args, stream);
  } else {
    launch<T, kMaxSharedBins, 2>(args, stream);
  }
}

template void sub_histograms<std::uint8_t>(const HistogramArgs<std::uint8_t>&, cudaStream_t);
template void sub_histograms<std::uint16_t>(const HistogramArgs<std::uint16_t>&, cudaStream_t);

}  // namespace cudalab::histogram_variants
