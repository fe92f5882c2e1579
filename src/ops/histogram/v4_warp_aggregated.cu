#include "core/warp.cuh"
#include "ops/histogram/block_histogram.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

constexpr int kBlockSize = 256;
constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;
// What a lane past the end of the array matches on: no sample value is this large.
constexpr std::uint32_t kNoSample = 0xffffffffu;

// The sub-histogram kernel with one atomic per distinct key per warp: __match_any_sync gives each
// lane the lanes holding its key, and the lowest of them adds their number.
template <typename Key, int MaxBins, int Copies>
__global__ void histogram_warp_aggregated_kernel(const Key* __restrict__ samples, std::int64_t n, std::uint32_t* counts,
                                                 int bins) {
  __shared__ std::uint32_t histograms[Copies * MaxBins];
  std::uint32_t* mine = histograms + (threadIdx.x / kWarpSize) % Copies * MaxBins;
  privatized_histogram(histograms, Copies, MaxBins, bins, counts, [&] {
    const int lane = threadIdx.x % kWarpSize;
    const std::int64_t stride = global_thread_count();
    // The loop runs on the warp's first index, so every lane reaches every match together.
    for (std::int64_t warp_first = global_thread_index() - lane; warp_first < n; warp_first += stride) {
      const std::int64_t i = warp_first + lane;
      const std::uint32_t key = i < n ? static_cast<std::uint32_t>(samples[i]) : kNoSample;
      const unsigned peers = __match_any_sync(kFullWarpMask, key);
      if (key != kNoSample && has_bin<Key>(key, bins) && lane == __ffs(peers) - 1)
        atomicAdd(&mine[key], static_cast<std::uint32_t>(__popc(peers)));
    }
  });
}

template <typename Key, int MaxBins, int Copies>
void launch(const HistogramArgs<Key>& args, cudaStream_t stream) {
  static_assert(kBlockSize % kWarpSize == 0, "whole warps: every lane takes part in the match");
  static_assert(Copies >= 1 && Copies <= kWarpsPerBlock, "at most one copy per warp");
  require_bins<Key, MaxBins>(args.bins, "warp_aggregated");
  zero_counts(args.counts, args.bins, stream);
  if (args.n == 0) return;
  const auto kernel = histogram_warp_aggregated_kernel<Key, MaxBins, Copies>;
  const int blocks = resident_grid_size(kernel, kBlockSize, args.n);
  kernel<<<blocks, kBlockSize, 0, stream>>>(args.samples, args.n, args.counts, args.bins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void warp_aggregated(const HistogramArgs<T>& args, cudaStream_t stream) {
  if constexpr (sizeof(T) == 1) {
    launch<T, kByteHistogramBins, kWarpsPerBlock>(args, stream);
  } else {
    launch<T, kMaxSharedBins, 2>(args, stream);
  }
}

template void warp_aggregated<std::uint8_t>(const HistogramArgs<std::uint8_t>&, cudaStream_t);
template void warp_aggregated<std::uint16_t>(const HistogramArgs<std::uint16_t>&, cudaStream_t);

}  // namespace cudalab::histogram_variants
