#include "core/shared_atomics.cuh"
#include "core/warp.cuh"
#include "ops/histogram/block_histogram.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

// 128 threads, each owning a column of 128 words: word r of thread t holds the 16-bit counts of
// bins 2r (low half) and 2r+1 (high half) at columns[r * kBlockSize + t]. Thread t's column lies
// in bank t % 32, so a warp's 32 adds hit 32 banks whatever the keys: no conflicts, no shared
// address. 64 KiB per block: three blocks (12 warps) per SM on an H100.
constexpr int kBlockSize = 128;
constexpr int kRows = kByteHistogramBins / 2;
constexpr std::size_t kSharedBytes = static_cast<std::size_t>(kRows) * kBlockSize * sizeof(std::uint32_t);
// uint4s each thread loads before counting them: 64 bytes in flight per thread, 24 KiB per SM,
// enough to cover the memory latency at 12 warps per SM.
constexpr int kUnroll = 4;
// A 16-bit counter holds 65535, so a thread's column is merged and cleared after at most this
// many vectors (16 keys each, plus up to 15 head and 15 tail keys in the first round). 1024 keeps
// the merge under 1% of the counting and lets a 1 GiB input (tested) run two rounds on an H100.
constexpr std::int64_t kVectorsPerRound = 1024;
static_assert(16 * kVectorsPerRound + 30 <= 65535, "a 16-bit counter must not overflow within a round");
static_assert(kRows == kBlockSize, "the merge sums row t of every column in thread t");
static_assert(kBlockSize % kWarpSize == 0, "a warp's columns cover all 32 banks");

// The column is private, so the add needs no atomicity; it is a shared atomic with no result
// (red.shared) because a plain load-add-store waits for its load before the next key's add can
// start (the compiler cannot rule out two keys sharing a word). Measured on an H100 at 2^28:
// plain 16-bit load-add-store, two keys per step with both loads before either store, 188 us;
// this, 123 us.
__device__ __forceinline__ void count_byte(std::uint32_t* column, std::uint32_t byte) {
  shared_add_no_return(&column[(byte >> 1) * kBlockSize], 1u << ((byte & 1u) * 16));
}

__device__ __forceinline__ void count_vector(std::uint32_t* column, const uint4& vector) {
  for_each_key<std::uint8_t>(vector, [&](std::uint32_t byte) { count_byte(column, byte); });
}

// Thread t adds row t of all columns into bins 2t and 2t+1, starting at its own column so that
// at each step the warp's 32 reads fall in 32 different banks, then the block clears the columns.
__device__ __forceinline__ void merge_and_clear(std::uint32_t* columns, std::uint32_t* column, std::uint32_t* counts) {
  __syncthreads();
  const int row = threadIdx.x;
  std::uint32_t even = 0, odd = 0;
  for (int j = 0; j < kBlockSize; ++j) {
    const std::uint32_t word = columns[row * kBlockSize + (row + j) % kBlockSize];
    even += word & 0xffffu;
    odd += word >> 16;
  }
  if (even != 0) atomicAdd(&counts[2 * row], even);
  if (odd != 0) atomicAdd(&counts[2 * row + 1], odd);
  __syncthreads();
  for (int r = 0; r < kRows; ++r) column[r * kBlockSize] = 0;
}

__global__ void __launch_bounds__(kBlockSize)
    histogram_lane_columns_kernel(const std::uint8_t* __restrict__ samples, VectorSplit<std::uint8_t> split,
                                  std::uint32_t* counts) {
  extern __shared__ std::uint32_t columns[];
  std::uint32_t* column = columns + threadIdx.x;
  for (int r = 0; r < kRows; ++r) column[r * kBlockSize] = 0;
  count_split_edges(samples, split, [&](std::uint32_t byte) { count_byte(column, byte); });

  const std::int64_t stride = global_thread_count();
  const std::int64_t per_round = stride * kVectorsPerRound;
  // Every block runs the same number of rounds (at least one, for the head and tail), since each
  // round ends in a block-wide merge.
  for (std::int64_t begin = 0; begin == 0 || begin < split.vectors; begin += per_round) {
    const std::int64_t end = split.vectors - begin < per_round ? split.vectors : begin + per_round;
    std::int64_t i = begin + global_thread_index();
    for (; i + (kUnroll - 1) * stride < end; i += kUnroll * stride) {
      uint4 vectors[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) vectors[u] = split.body[i + u * stride];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) count_vector(column, vectors[u]);
    }
    for (; i < end; i += stride) count_vector(column, split.body[i]);
    merge_and_clear(columns, column, counts);
  }
}

}  // namespace

void lane_columns(const HistogramArgs<std::uint8_t>& args, cudaStream_t stream) {
  require_bins<std::uint8_t, kByteHistogramBins>(args.bins, "lane_columns");
  zero_counts(args.counts, kByteHistogramBins, stream);
  if (args.n == 0) return;
  const VectorSplit<std::uint8_t> split = split_for_vectors(args.samples, args.n);
  // Above 48 KiB a kernel must opt in to its dynamic shared memory (per device, so on every call).
  CUDALAB_CUDA_CHECK(cudaFuncSetAttribute(histogram_lane_columns_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(kSharedBytes)));
  const int blocks = resident_grid_size(histogram_lane_columns_kernel, kBlockSize, split.vectors, kSharedBytes);
  histogram_lane_columns_kernel<<<blocks, kBlockSize, kSharedBytes, stream>>>(args.samples, split, args.counts);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::histogram_variants
