// The layout and round structure of the lane-column byte kernels (v6, v7): 128 threads, each
// owning a column of 128 words; word r of thread t holds the 16-bit counts of bins 2r (low half)
// and 2r+1 (high half) at columns[r * kLaneColumnsBlock + t]. Thread t's column lies in bank
// t % 32, so a warp's 32 counter updates hit 32 banks whatever the keys. 64 KiB per block: three
// blocks (12 warps) per SM on an H100.
#pragma once

#include <cstdint>

#include "cudalab/histogram.hpp"
#include "ops/histogram/block_histogram.cuh"

namespace cudalab::histogram_variants {

constexpr int kLaneColumnsBlock = 128;
constexpr int kLaneColumnsRows = kByteHistogramBins / 2;
constexpr std::size_t kLaneColumnsSharedBytes =
    static_cast<std::size_t>(kLaneColumnsRows) * kLaneColumnsBlock * sizeof(std::uint32_t);
// uint4s each thread loads before counting them: 64 bytes in flight per thread, 24 KiB per SM,
// enough to cover the memory latency at 12 warps per SM.
constexpr int kLaneColumnsUnroll = 4;
// A 16-bit counter holds 65535, so a thread's column is merged and cleared after at most this
// many vectors (16 keys each, plus up to 15 head and 15 tail keys in the first round). 1024 keeps
// the merge under 1% of the counting and lets a 1 GiB input (tested) run two rounds on an H100.
constexpr std::int64_t kLaneColumnsVectorsPerRound = 1024;
static_assert(16 * kLaneColumnsVectorsPerRound + 30 <= 65535, "a 16-bit counter must not overflow within a round");
static_assert(kLaneColumnsRows == kLaneColumnsBlock, "the merge sums row t of every column in thread t");
static_assert(kLaneColumnsBlock % 32 == 0, "a warp's columns cover all 32 banks");

// Thread t adds row t of all columns into bins 2t and 2t+1, starting at its own column so that
// at each step the warp's 32 reads fall in 32 different banks, then each thread clears its column.
__device__ __forceinline__ void lane_columns_merge_and_clear(std::uint32_t* columns, std::uint32_t* counts) {
  __syncthreads();
  const int row = threadIdx.x;
  std::uint32_t even = 0, odd = 0;
  for (int j = 0; j < kLaneColumnsBlock; ++j) {
    const std::uint32_t word = columns[row * kLaneColumnsBlock + (row + j) % kLaneColumnsBlock];
    even += word & 0xffffu;
    odd += word >> 16;
  }
  if (even != 0) atomicAdd(&counts[2 * row], even);
  if (odd != 0) atomicAdd(&counts[2 * row + 1], odd);
  __syncthreads();
  for (int r = 0; r < kLaneColumnsRows; ++r) columns[r * kLaneColumnsBlock + threadIdx.x] = 0;
}

// The kernel body: count_byte(key) and count_vector(uint4) add into the calling thread's column
// of `columns` (dynamic shared memory, kLaneColumnsSharedBytes).
template <typename CountByte, typename CountVector>
__device__ __forceinline__ void lane_columns_histogram(std::uint32_t* columns, const std::uint8_t* samples,
                                                       const VectorSplit<std::uint8_t>& split, std::uint32_t* counts,
                                                       CountByte&& count_byte, CountVector&& count_vector) {
  for (int r = 0; r < kLaneColumnsRows; ++r) columns[r * kLaneColumnsBlock + threadIdx.x] = 0;
  count_split_edges(samples, split, count_byte);
  const std::int64_t stride = global_thread_count();
  const std::int64_t per_round = stride * kLaneColumnsVectorsPerRound;
  // Every block runs the same number of rounds (at least one, for the head and tail), since each
  // round ends in a block-wide merge.
  for (std::int64_t begin = 0; begin == 0 || begin < split.vectors; begin += per_round) {
    const std::int64_t end = split.vectors - begin < per_round ? split.vectors : begin + per_round;
    std::int64_t i = begin + global_thread_index();
    for (; i + (kLaneColumnsUnroll - 1) * stride < end; i += kLaneColumnsUnroll * stride) {
      uint4 vectors[kLaneColumnsUnroll];
#pragma unroll
      for (int u = 0; u < kLaneColumnsUnroll; ++u) vectors[u] = split.body[i + u * stride];
#pragma unroll
      for (int u = 0; u < kLaneColumnsUnroll; ++u) count_vector(vectors[u]);
    }
    for (; i < end; i += stride) count_vector(split.body[i]);
    lane_columns_merge_and_clear(columns, counts);
  }
}

// Zeroes the counts and launches a lane-column kernel on a resident grid.
template <typename Kernel>
void launch_lane_columns(Kernel kernel, const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts,
                         cudaStream_t stream) {
  zero_counts(counts, kByteHistogramBins, stream);
  if (n == 0) return;
  const VectorSplit<std::uint8_t> split = split_for_vectors(samples, n);
  // Above 48 KiB a kernel must opt in to its dynamic shared memory (per device, so on every call).
  CUDALAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(kLaneColumnsSharedBytes)));
  const int blocks = resident_grid_size(kernel, kLaneColumnsBlock, split.vectors, kLaneColumnsSharedBytes);
  kernel<<<blocks, kLaneColumnsBlock, kLaneColumnsSharedBytes, stream>>>(samples, split, counts);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::histogram_variants
