#include "ops/histogram/block_histogram.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

constexpr int kBlockSize = 256;

// One shared histogram of MaxBins counters per block (1 KiB for bytes, 16 KiB for 4096 bins).
template <typename Key, int MaxBins>
__global__ void histogram_shared_privatized_kernel(const Key* __restrict__ samples, std::int64_t n,
                                                   std::uint32_t* counts, int bins) {
  __shared__ std::uint32_t histogram[MaxBins];
  privatized_histogram(histogram, 1, MaxBins, bins, counts, [&] {
    const std::int64_t stride = global_thread_count();
    for (std::int64_t i = global_thread_index(); i < n; i += stride) {
      const std::uint32_t key = samples[i];
      if (has_bin<Key>(key, bins)) atomicAdd(&histogram[key], 1u);
    }
  });
}

template <typename Key, int MaxBins>
void launch(const HistogramArgs<Key>& args, cudaStream_t stream) {
  static_assert(MaxBins % 32 == 0, "whole rows of banks");
  require_bins<Key, MaxBins>(args.bins, "shared_privatized");
  zero_counts(args.counts, args.bins, stream);
  if (args.n == 0) return;
  const auto kernel = histogram_shared_privatized_kernel<Key, MaxBins>;
  const int blocks = resident_grid_size(kernel, kBlockSize, args.n);
  kernel<<<blocks, kBlockSize, 0, stream>>>(args.samples, args.n, args.counts, args.bins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void shared_privatized(const HistogramArgs<T>& args, cudaStream_t stream) {
  launch<T, sizeof(T) == 1 ? kByteHistogramBins : kMaxSharedBins>(args, stream);
}

template void shared_privatized<std::uint8_t>(const HistogramArgs<std::uint8_t>&, cudaStream_t);
template void shared_privatized<std::uint16_t>(const HistogramArgs<std::uint16_t>&, cudaStream_t);

}  // namespace cudalab::histogram_variants
