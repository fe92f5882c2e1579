#include "ops/histogram/lane_columns.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

// The 16-bit counter of `byte` in a thread's column, addressed as a halfword: the word layout of
// lane_columns.cuh, so the merge reads it unchanged.
__device__ __forceinline__ std::uint16_t* counter(std::uint16_t* column, std::uint32_t byte) {
  return column + (byte >> 1) * (2 * kLaneColumnsBlock) + (byte & 1u);
}

__device__ __forceinline__ void count_byte(std::uint16_t* column, std::uint32_t byte) {
  std::uint16_t* c = counter(column, byte);
  *c = static_cast<std::uint16_t>(*c + 1);
}

// Both loads are issued before either store, so the two load latencies overlap. Equal keys share
// one counter: both loads then see the same old value and both stores write old + 2.
__device__ __forceinline__ void count_pair(std::uint16_t* column, std::uint32_t a, std::uint32_t b) {
  std::uint16_t* ca = counter(column, a);
  std::uint16_t* cb = counter(column, b);
  const std::uint32_t add = a == b ? 2u : 1u;
  const std::uint32_t old_a = *ca;
  const std::uint32_t old_b = *cb;
  *ca = static_cast<std::uint16_t>(old_a + add);
  *cb = static_cast<std::uint16_t>(old_b + add);
}

__global__ void __launch_bounds__(kLaneColumnsBlock)
    histogram_lane_columns_paired_kernel(const std::uint8_t* __restrict__ samples, VectorSplit<std::uint8_t> split,
                                         std::uint32_t* counts) {
  extern __shared__ std::uint32_t columns[];
  std::uint16_t* column = reinterpret_cast<std::uint16_t*>(columns + threadIdx.x);
  lane_columns_histogram(
      columns, samples, split, counts, [column](std::uint32_t byte) { count_byte(column, byte); },
      [column](const uint4& vector) {
        const std::uint32_t words[4] = {vector.x, vector.y, vector.z, vector.w};
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          count_pair(column, words[w] & 0xffu, (words[w] >> 8) & 0xffu);
          count_pair(column, (words[w] >> 16) & 0xffu, words[w] >> 24);
        }
      });
}

}  // namespace

void lane_columns_paired(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, cudaStream_t stream) {
  launch_lane_columns(histogram_lane_columns_paired_kernel, samples, n, counts, stream);
}

}  // namespace cudalab::histogram_variants
