#include "harness/random.hpp"

#include <cmath>

#include "core/launch.cuh"
#include "cudalab/error.hpp"

namespace cudalab::harness {

std::vector<Distribution> all_distributions() {
  return {Distribution::uniform,   Distribution::normal, Distribution::integers,
          Distribution::all_equal, Distribution::sorted, Distribution::large_magnitude};
}

const char* to_string(Distribution distribution) {
  switch (distribution) {
    case Distribution::uniform: return "uniform";
    case Distribution::normal: return "normal";
    case Distribution::integers: return "integers";
    case Distribution::all_equal: return "all_equal";
    case Distribution::sorted: return "sorted";
    case Distribution::large_magnitude: return "large_magnitude";
  }
  return "unknown";
}

bool parse_distribution(const std::string& text, Distribution* out) {
  for (Distribution d : all_distributions()) {
    if (text == to_string(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

__host__ __device__ float random_value(std::uint64_t seed, std::int64_t index, std::int64_t count,
                                       Distribution distribution) {
  const std::uint64_t bits = mix64(seed ^ mix64(static_cast<std::uint64_t>(index)));
  switch (distribution) {
    case Distribution::uniform:
      return 2.0f * unit_float(bits) - 1.0f;
    case Distribution::normal: {
      const float u1 = unit_float(bits) + (0.5f / 16777216.0f);  // (0, 1): log stays finite
      const float u2 = unit_float(mix64(bits));
      return sqrtf(-2.0f * logf(u1)) * cosf(6.28318531f * u2);
    }
    case Distribution::integers:
      return static_cast<float>(static_cast<int>(bits % 33) - 16);
    case Distribution::all_equal:
      return 0.75f;
    case Distribution::sorted:
      return count > 1 ? -1.0f + 2.0f * static_cast<float>(static_cast<double>(index) /
                                                           static_cast<double>(count - 1))
                       : 0.0f;
    case Distribution::large_magnitude: {
      const float magnitude = 1e30f * (1.0f + 99.0f * unit_float(bits));
      return (mix64(bits) & 1) ? magnitude : -magnitude;
    }
  }
  return 0.0f;
}

namespace {
__global__ void fill_random_kernel(float* values, std::int64_t n, std::uint64_t seed,
                                   Distribution distribution) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride)
    values[i] = random_value(seed, i, n, distribution);
}
}  // namespace

void fill_random(float* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution,
                 cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kBlockSize = 256;
  const int blocks = resident_grid_size(fill_random_kernel, kBlockSize, n);
  fill_random_kernel<<<blocks, kBlockSize, 0, stream>>>(device_values, n, seed, distribution);
  CUDALAB_CHECK_LAUNCH();
}

void poison(void* device_bytes, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(device_bytes, 0xFF, bytes, stream));
}

}  // namespace cudalab::harness
