#include "cudalab/histogram.hpp"
#include "ops/histogram/block_histogram.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

constexpr int kBlockSize = 256;
constexpr int kWarpsPerBlock = kBlockSize / 32;

// The sub-histogram kernel reading 16 bytes per load: each thread counts every key of a uint4,
// a block's worth of uint4s apart so each warp request is 512 contiguous bytes.
template <typename Key, int MaxBins, int Copies>
__global__ void histogram_vectorized_kernel(const Key* __restrict__ samples, VectorSplit<Key> split,
                                            std::uint32_t* counts, int bins) {
  __shared__ std::uint32_t histograms[Copies * MaxBins];
  std::uint32_t* mine = histograms + (threadIdx.x / 32) % Copies * MaxBins;
  privatized_histogram(histograms, Copies, MaxBins, bins, counts, [&] {
    const auto count = [&](std::uint32_t key) {
      if (has_bin<Key>(key, bins)) atomicAdd(&mine[key], 1u);
    };
    const std::int64_t stride = global_thread_count();
    for (std::int64_t i = global_thread_index(); i < split.vectors; i += stride)
      for_each_key<Key>(split.body[i], count);
    count_split_edges(samples, split, count);
  });
}

template <typename Key, int MaxBins, int Copies>
void launch(const Key* samples, std::int64_t n, std::uint32_t* counts, int bins, cudaStream_t stream) {
  static_assert(Copies >= 1 && Copies <= kWarpsPerBlock, "at most one copy per warp");
  CUDALAB_REQUIRE(bins >= 1 && bins <= MaxBins, "histogram vectorized: bins out of range");
  zero_counts(counts, bins, stream);
  if (n == 0) return;
  const VectorSplit<Key> split = split_for_vectors(samples, n);
  const auto kernel = histogram_vectorized_kernel<Key, MaxBins, Copies>;
  const int blocks = resident_grid_size(kernel, kBlockSize, split.vectors);
  kernel<<<blocks, kBlockSize, 0, stream>>>(samples, split, counts, bins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void vectorized(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, cudaStream_t stream) {
  launch<std::uint8_t, kByteHistogramBins, kWarpsPerBlock>(samples, n, counts, kByteHistogramBins, stream);
}

void vectorized(const std::uint16_t* samples, std::int64_t n, std::uint32_t* counts, int bins, cudaStream_t stream) {
  launch<std::uint16_t, kMaxSharedBins, 2>(samples, n, counts, bins, stream);
}

}  // namespace cudalab::histogram_variants
