#include "ops/histogram/block_histogram.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

constexpr int kBlockSize = 256;

template <typename Key>
__global__ void histogram_global_atomics_kernel(const Key* __restrict__ samples, std::int64_t n, std::uint32_t* counts,
                                                int bins) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) {
    const std::uint32_t key = samples[i];
    if (has_bin<Key>(key, bins)) atomicAdd(&counts[key], 1u);
  }
}

}  // namespace

// The counters live in global memory, so any bin count a key type can address works.
template <typename T>
void global_atomics(const HistogramArgs<T>& args, cudaStream_t stream) {
  require_bins<T, kMaxHistogramBins>(args.bins, "global_atomics");
  zero_counts(args.counts, args.bins, stream);
  if (args.n == 0) return;
  const int blocks = resident_grid_size(histogram_global_atomics_kernel<T>, kBlockSize, args.n);
  histogram_global_atomics_kernel<T><<<blocks, kBlockSize, 0, stream>>>(args.samples, args.n, args.counts, args.bins);
  CUDALAB_CHECK_LAUNCH();
}

template void global_atomics<std::uint8_t>(const HistogramArgs<std::uint8_t>&, cudaStream_t);
template void global_atomics<std::uint16_t>(const HistogramArgs<std::uint16_t>&, cudaStream_t);

}  // namespace cudalab::histogram_variants
