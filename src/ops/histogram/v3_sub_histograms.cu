#include "cudalab/histogram.hpp"
#include "ops/histogram/block_histogram.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

constexpr int kBlockSize = 256;
constexpr int kWarpsPerBlock = kBlockSize / 32;

// Copies sub-histograms of MaxBins counters per block; warp w adds to copy w % Copies. The seed's
// second hint, padding each copy to shift its banks, would only matter if lanes of one warp used
// different copies; here a warp's atomics all land in one copy, so there is nothing to shift.
template <typename Key, int MaxBins, int Copies>
__global__ void histogram_sub_histograms_kernel(const Key* __restrict__ samples, std::int64_t n, std::uint32_t* counts,
                                                int bins) {
  __shared__ std::uint32_t histograms[Copies * MaxBins];
  std::uint32_t* mine = histograms + (threadIdx.x / 32) % Copies * MaxBins;
  privatized_histogram(histograms, Copies, MaxBins, bins, counts, [&] {
    const std::int64_t stride = global_thread_count();
    for (std::int64_t i = global_thread_index(); i < n; i += stride) {
      const std::uint32_t key = samples[i];
      if (has_bin<Key>(key, bins)) atomicAdd(&mine[key], 1u);
    }
  });
}

template <typename Key, int MaxBins, int Copies>
void launch(const Key* samples, std::int64_t n, std::uint32_t* counts, int bins, cudaStream_t stream) {
  static_assert(Copies >= 1 && Copies <= kWarpsPerBlock, "at most one copy per warp");
  static_assert(Copies * MaxBins * 4 <= 48 * 1024, "static shared memory is at most 48 KiB");
  CUDALAB_REQUIRE(bins >= 1 && bins <= MaxBins, "histogram sub_histograms: bins out of range");
  zero_counts(counts, bins, stream);
  if (n == 0) return;
  const auto kernel = histogram_sub_histograms_kernel<Key, MaxBins, Copies>;
  const int blocks = resident_grid_size(kernel, kBlockSize, n);
  kernel<<<blocks, kBlockSize, 0, stream>>>(samples, n, counts, bins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

// Bytes: one 1 KiB copy per warp. 4096 bins: two 16 KiB copies per block (32 KiB), which still
// lets several blocks share an SM.
void sub_histograms(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, cudaStream_t stream) {
  launch<std::uint8_t, kByteHistogramBins, kWarpsPerBlock>(samples, n, counts, kByteHistogramBins, stream);
}

void sub_histograms(const std::uint16_t* samples, std::int64_t n, std::uint32_t* counts, int bins,
                    cudaStream_t stream) {
  launch<std::uint16_t, kMaxSharedBins, 2>(samples, n, counts, bins, stream);
}

}  // namespace cudalab::histogram_variants
