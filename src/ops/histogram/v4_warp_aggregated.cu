#include "cudalab/histogram.hpp"
#include "ops/histogram/block_histogram.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

constexpr int kBlockSize = 256;
constexpr int kWarpsPerBlock = kBlockSize / 32;
// What a lane past the end of the array matches on: no sample value is this large.
constexpr std::uint32_t kNoSample = 0xffffffffu;

// The sub-histogram kernel with one atomic per distinct key per warp: __match_any_sync gives each
// lane the lanes holding its key, and the lowest of them adds their number.
template <typename Key, int MaxBins, int Copies>
__global__ void histogram_warp_aggregated_kernel(const Key* __restrict__ samples, std::int64_t n, std::uint32_t* counts,
                                                 int bins) {
  __shared__ std::uint32_t histograms[Copies * MaxBins];
  std::uint32_t* mine = histograms + (threadIdx.x / 32) % Copies * MaxBins;
  privatized_histogram(histograms, Copies, MaxBins, bins, counts, [&] {
    const int lane = threadIdx.x % 32;
    const std::int64_t stride = global_thread_count();
    // The loop runs on the warp's first index, so every lane reaches every match together.
    for (std::int64_t warp_first = global_thread_index() - lane; warp_first < n; warp_first += stride) {
      const std::int64_t i = warp_first + lane;
      const std::uint32_t key = i < n ? static_cast<std::uint32_t>(samples[i]) : kNoSample;
      const unsigned peers = __match_any_sync(0xffffffffu, key);
      if (key != kNoSample && has_bin<Key>(key, bins) && lane == __ffs(peers) - 1)
        atomicAdd(&mine[key], static_cast<std::uint32_t>(__popc(peers)));
    }
  });
}

template <typename Key, int MaxBins, int Copies>
void launch(const Key* samples, std::int64_t n, std::uint32_t* counts, int bins, cudaStream_t stream) {
  static_assert(kBlockSize % 32 == 0, "whole warps: every lane takes part in the match");
  static_assert(Copies >= 1 && Copies <= kWarpsPerBlock, "at most one copy per warp");
  CUDALAB_REQUIRE(bins >= 1 && bins <= MaxBins, "histogram warp_aggregated: bins out of range");
  zero_counts(counts, bins, stream);
  if (n == 0) return;
  const auto kernel = histogram_warp_aggregated_kernel<Key, MaxBins, Copies>;
  const int blocks = resident_grid_size(kernel, kBlockSize, n);
  kernel<<<blocks, kBlockSize, 0, stream>>>(samples, n, counts, bins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void warp_aggregated(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, cudaStream_t stream) {
  launch<std::uint8_t, kByteHistogramBins, kWarpsPerBlock>(samples, n, counts, kByteHistogramBins, stream);
}

void warp_aggregated(const std::uint16_t* samples, std::int64_t n, std::uint32_t* counts, int bins,
                     cudaStream_t stream) {
  launch<std::uint16_t, kMaxSharedBins, 2>(samples, n, counts, bins, stream);
}

}  // namespace cudalab::histogram_variants
