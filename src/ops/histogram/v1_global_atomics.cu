#include "cudalab/histogram.hpp"
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

template <typename Key>
void launch(const Key* samples, std::int64_t n, std::uint32_t* counts, int bins, cudaStream_t stream) {
  zero_counts(counts, bins, stream);
  if (n == 0) return;
  const int blocks = resident_grid_size(histogram_global_atomics_kernel<Key>, kBlockSize, n);
  histogram_global_atomics_kernel<Key><<<blocks, kBlockSize, 0, stream>>>(samples, n, counts, bins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void global_atomics(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, cudaStream_t stream) {
  launch(samples, n, counts, kByteHistogramBins, stream);
}

void global_atomics(const std::uint16_t* samples, std::int64_t n, std::uint32_t* counts, int bins,
                    cudaStream_t stream) {
  launch(samples, n, counts, bins, stream);
}

}  // namespace cudalab::histogram_variants
