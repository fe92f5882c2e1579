#include "cudalab/histogram.hpp"
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
void launch(const Key* samples, std::int64_t n, std::uint32_t* counts, int bins, cudaStream_t stream) {
  static_assert(MaxBins % 32 == 0, "whole rows of banks");
  CUDALAB_REQUIRE(bins >= 1 && bins <= MaxBins, "histogram shared_privatized: bins out of range");
  zero_counts(counts, bins, stream);
  if (n == 0) return;
  const auto kernel = histogram_shared_privatized_kernel<Key, MaxBins>;
  const int blocks = resident_grid_size(kernel, kBlockSize, n);
  kernel<<<blocks, kBlockSize, 0, stream>>>(samples, n, counts, bins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void shared_privatized(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, cudaStream_t stream) {
  launch<std::uint8_t, kByteHistogramBins>(samples, n, counts, kByteHistogramBins, stream);
}

void shared_privatized(const std::uint16_t* samples, std::int64_t n, std::uint32_t* counts, int bins,
                       cudaStream_t stream) {
  launch<std::uint16_t, kMaxSharedBins>(samples, n, counts, bins, stream);
}

}  // namespace cudalab::histogram_variants
