#include "core/shared_atomics.cuh"
#include "ops/histogram/lane_columns.cuh"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

// The column is private, so the add needs no atomicity; it is a shared atomic with no result
// (red.shared) because a plain load-add-store would wait for its load before the next key's add
// could start (the compiler cannot rule out two keys sharing a word).
__device__ __forceinline__ void count_byte(std::uint32_t* column, std::uint32_t byte) {
  shared_add_no_return(&column[(byte >> 1) * kLaneColumnsBlock], 1u << ((byte & 1u) * 16));
}

__global__ void __launch_bounds__(kLaneColumnsBlock)
    histogram_lane_columns_kernel(const std::uint8_t* __restrict__ samples, VectorSplit<std::uint8_t> split,
                                  std::uint32_t* counts) {
  extern __shared__ std::uint32_t columns[];
  std::uint32_t* column = columns + threadIdx.x;
  const auto count = [column](std::uint32_t byte) { count_byte(column, byte); };
  lane_columns_histogram(columns, samples, split, counts, count,
                         [&](const uint4& vector) { for_each_key<std::uint8_t>(vector, count); });
}

}  // namespace

void lane_columns(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, cudaStream_t stream) {
  launch_lane_columns(histogram_lane_columns_kernel, samples, n, counts, stream);
}

}  // namespace cudalab::histogram_variants
