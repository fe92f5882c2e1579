#include "core/warp.cuh"
#include "ops/histogram/block_histogram.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

constexpr int kBlockSize = 256;
constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;

// The sub-histogram kernel reading 16 bytes per load: each thread counts every key of a uint4,
// a block's worth of uint4s apart so each warp request is 512 contiguous bytes.
template <typename Key, int MaxBins, int Copies>
__global__ void histogram_vectorized_kernel(const Key* __restrict__ samples, VectorSplit<Key> split,
                                            std::uint32_t* counts, int bins) {
  __shared__ std::uint32_t histograms[Copies * MaxBins];
  std::uint32_t* mine = histograms + (threadIdx.x / kWarpSize) % Copies * MaxBins;
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
void launch(const HistogramArgs<Key>& args, cudaStream_t stream) {
  static_assert(Copies >= 1 && Copies <= kWarpsPerBlock, "at most one copy per warp");
  require_bins<Key, MaxBins>(args.bins, "vectorized");
  zero_counts(args.counts, args.bins, stream);
  if (args.n == 0) return;
  const VectorSplit<Key> split = split_for_vectors(args.samples, args.n);
  const auto kernel = histogram_vectorized_kernel<Key, MaxBins, Copies>;
  const int blocks = resident_grid_size(kernel, kBlockSize, split.vectors);
  kernel<<<blocks, kBlockSize, 0, stream>>>(args.samples, split, args.counts, args.bins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void vectorized(const HistogramArgs<T>& args, cudaStream_t stream) {
  if constexpr (sizeof(T) == 1) {
    launch<T, kByteHistogramBins, kWarpsPerBlock>(args, stream);
  } else {
    launch<T, kMaxSharedBins, 2>(args, stream);
  }
}

template void vectorized<std::uint8_t>(const HistogramArgs<std::uint8_t>&, cudaStream_t);
template void vectorized<std::uint16_t>(const HistogramArgs<std::uint16_t>&, cudaStream_t);

}  // namespace cudalab::histogram_variants
