// Pieces every histogram kernel of the ladder shares: which keys have a bin, unpacking a 16-byte
// vector into keys, splitting an array at any alignment into 16-byte vectors, and the block-level
// zero and merge of shared-memory sub-histograms.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/histogram.hpp"

namespace cudalab::histogram_variants {

// Whether `key` has a bin. A byte always does (256 bins); a wider key at or above `bins` is not
// counted, as HistogramEven skips samples outside [lower, upper). The byte case compiles to no test.
template <typename Key>
__device__ __forceinline__ bool has_bin(std::uint32_t key, int bins) {
  if constexpr (sizeof(Key) == 1) {
    return true;
  } else {
    return key < static_cast<std::uint32_t>(bins);
  }
}

// The bin counts a kernel for Key can take: a byte kernel counts every key (has_bin is always
// true), so it needs all 256 bins; wider keys take 1 to MaxBins.
template <typename Key, int MaxBins>
void require_bins(int bins, const char* variant) {
  if constexpr (sizeof(Key) == 1) {
    CUDALAB_REQUIRE(bins == kByteHistogramBins,
                    std::string("histogram ") + variant + ": byte samples take 256 bins, got " + std::to_string(bins));
  } else {
    CUDALAB_REQUIRE(bins >= 1 && bins <= MaxBins, std::string("histogram ") + variant + ": bins must be in [1, " +
                                                      std::to_string(MaxBins) + "], got " + std::to_string(bins));
  }
}

// Calls count(key) for each of the 16 / sizeof(Key) keys packed in a 16-byte vector.
template <typename Key, typename Count>
__device__ __forceinline__ void for_each_key(const uint4& vector, Count&& count) {
  static_assert(sizeof(Key) == 1 || sizeof(Key) == 2, "keys are 8 or 16 bits");
  constexpr int kBits = 8 * static_cast<int>(sizeof(Key));
  constexpr std::uint32_t kMask = (1u << kBits) - 1;
  const std::uint32_t words[4] = {vector.x, vector.y, vector.z, vector.w};
#pragma unroll
  for (int w = 0; w < 4; ++w) {
#pragma unroll
    for (int shift = 0; shift < 32; shift += kBits) count((words[w] >> shift) & kMask);
  }
}

// An array of keys seen as an unaligned head (fewer than 16 bytes), whole 16-byte vectors, and a
// tail (fewer than 16 bytes), so a kernel can use 16-byte loads whatever the array's alignment.
template <typename Key>
struct VectorSplit {
  static constexpr int kKeysPerVector = 16 / static_cast<int>(sizeof(Key));
  int head = 0;
  std::int64_t vectors = 0;
  int tail = 0;
  const uint4* body = nullptr;  // the first whole vector, 16-byte aligned
  const Key* tail_keys = nullptr;
};

template <typename Key>
VectorSplit<Key> split_for_vectors(const Key* keys, std::int64_t n) {
  CUDALAB_REQUIRE(reinterpret_cast<std::uintptr_t>(keys) % sizeof(Key) == 0,
                  "histogram: samples must be aligned to their size");
  VectorSplit<Key> split;
  const std::int64_t to_boundary =
      static_cast<std::int64_t>((16 - reinterpret_cast<std::uintptr_t>(keys) % 16) % 16 / sizeof(Key));
  split.head = static_cast<int>(n < to_boundary ? n : to_boundary);
  split.vectors = (n - split.head) / VectorSplit<Key>::kKeysPerVector;
  split.tail = static_cast<int>(n - split.head - split.vectors * VectorSplit<Key>::kKeysPerVector);
  split.body = reinterpret_cast<const uint4*>(keys + split.head);
  split.tail_keys = keys + split.head + split.vectors * VectorSplit<Key>::kKeysPerVector;
  return split;
}

// Calls count(key) for the head and tail keys of a split, one per thread of the first threads of
// the grid (fewer than 32 in all), so the vector loop needs no second launch.
template <typename Key, typename Count>
__device__ __forceinline__ void count_split_edges(const Key* head_keys, const VectorSplit<Key>& split, Count&& count) {
  const std::int64_t thread = global_thread_index();
  if (thread < split.head) count(static_cast<std::uint32_t>(head_keys[thread]));
  if (thread < split.tail) count(static_cast<std::uint32_t>(split.tail_keys[thread]));
}

__device__ __forceinline__ void zero_shared(std::uint32_t* words, int count) {
  for (int i = threadIdx.x; i < count; i += blockDim.x) words[i] = 0;
}

// Adds a block's `copies` sub-histograms (`pitch` words apart) into the global counts. Empty bins
// are skipped, so a block that saw few distinct keys adds few global atomics. Call after a
// __syncthreads() that ends the counting.
__device__ __forceinline__ void merge_sub_histograms(const std::uint32_t* sub_histograms, int copies, int pitch,
                                                     int bins, std::uint32_t* counts) {
  for (int bin = threadIdx.x; bin < bins; bin += blockDim.x) {
    std::uint32_t sum = 0;
    for (int c = 0; c < copies; ++c) sum += sub_histograms[c * pitch + bin];
    if (sum != 0) atomicAdd(&counts[bin], sum);
  }
}

// The shape of every shared-memory kernel of the ladder: zero the block's `copies` sub-histograms
// (`pitch` words apart), count the block's samples into them, merge them into the global counts.
template <typename CountSamples>
__device__ __forceinline__ void privatized_histogram(std::uint32_t* sub_histograms, int copies, int pitch, int bins,
                                                     std::uint32_t* counts, CountSamples&& count_samples) {
  zero_shared(sub_histograms, copies * pitch);
  __syncthreads();
  count_samples();
  __syncthreads();
  merge_sub_histograms(sub_histograms, copies, pitch, bins, counts);
}

// Every kernel adds into the global counts, so they start at zero; zeroing is part of each
// variant's launch (the library call must do it too, and CUB's HistogramEven does it as well).
inline void zero_counts(std::uint32_t* counts, int bins, cudaStream_t stream) {
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(counts, 0, static_cast<std::size_t>(bins) * sizeof(std::uint32_t), stream));
}

}  // namespace cudalab::histogram_variants
