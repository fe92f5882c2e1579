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
    case Distribution::uniform: return 2.0f * unit_float(bits) - 1.0f;
    case Distribution::normal: {
      const float u1 = unit_float(bits) + (0.5f / 16777216.0f);  // (0, 1): log stays finite
      const float u2 = unit_float(mix64(bits));
      return sqrtf(-2.0f * logf(u1)) * cosf(6.28318531f * u2);
    }
    case Distribution::integers: return static_cast<float>(static_cast<int>(bits % 33) - 16);
    case Distribution::all_equal: return 0.75f;
    case Distribution::sorted:
      return count > 1 ? -1.0f + 2.0f * static_cast<float>(static_cast<double>(index) / static_cast<double>(count - 1))
                       : 0.0f;
    case Distribution::large_magnitude: {
      const float magnitude = 1e30f * (1.0f + 99.0f * unit_float(bits));
      return (mix64(bits) & 1) ? magnitude : -magnitude;
    }
  }
  return 0.0f;
}

__host__ __device__ std::int32_t random_int(std::uint64_t seed, std::int64_t index, std::int64_t count,
                                            Distribution distribution) {
  const std::uint64_t bits = mix64(seed ^ mix64(static_cast<std::uint64_t>(index)));
  switch (distribution) {
    case Distribution::uniform:
    case Distribution::integers: return static_cast<std::int32_t>(bits % 33) - 16;
    case Distribution::normal:
      return static_cast<std::int32_t>(rintf(8.0f * random_value(seed, index, count, Distribution::normal)));
    case Distribution::all_equal: return 3;
    case Distribution::sorted: return count > 1 ? static_cast<std::int32_t>(-16 + (32 * index) / (count - 1)) : 0;
    case Distribution::large_magnitude: return static_cast<std::int32_t>(static_cast<std::uint32_t>(bits >> 32));
  }
  return 0;
}

__host__ __device__ std::uint8_t random_byte(std::uint64_t seed, std::int64_t index, std::int64_t count,
                                             Distribution distribution) {
  switch (distribution) {
    case Distribution::all_equal: return 7;
    case Distribution::sorted: return static_cast<std::uint8_t>(count > 1 ? (255 * index) / (count - 1) : 0);
    default: return static_cast<std::uint8_t>(mix64(seed ^ mix64(static_cast<std::uint64_t>(index))) >> 56);
  }
}

namespace {

template <typename T>
__device__ T random_element(std::uint64_t seed, std::int64_t i, std::int64_t n, Distribution d);
template <>
__device__ float random_element<float>(std::uint64_t seed, std::int64_t i, std::int64_t n, Distribution d) {
  return random_value(seed, i, n, d);
}
template <>
__device__ std::int32_t random_element<std::int32_t>(std::uint64_t seed, std::int64_t i, std::int64_t n,
                                                     Distribution d) {
  return random_int(seed, i, n, d);
}
template <>
__device__ std::uint8_t random_element<std::uint8_t>(std::uint64_t seed, std::int64_t i, std::int64_t n,
                                                     Distribution d) {
  return random_byte(seed, i, n, d);
}

template <>
__device__ double random_element<double>(std::uint64_t seed, std::int64_t i, std::int64_t n, Distribution d) {
  return random_value(seed, i, n, d);
}
template <>
__device__ std::int64_t random_element<std::int64_t>(std::uint64_t seed, std::int64_t i, std::int64_t n,
                                                     Distribution d) {
  return random_int(seed, i, n, d);
}
template <>
__device__ __nv_bfloat16 random_element<__nv_bfloat16>(std::uint64_t seed, std::int64_t i, std::int64_t n,
                                                       Distribution d) {
  return __float2bfloat16_rn(random_value(seed, i, n, d));
}
template <>
__device__ __half random_element<__half>(std::uint64_t seed, std::int64_t i, std::int64_t n, Distribution d) {
  if (d != Distribution::large_magnitude) return __float2half_rn(random_value(seed, i, n, d));
  const std::uint64_t bits = mix64(seed ^ mix64(static_cast<std::uint64_t>(i)));
  const float magnitude = 1024.0f + 64480.0f * unit_float(bits);
  return __float2half_rn((mix64(bits) & 1) ? magnitude : -magnitude);
}

// e4m3 holds 16 values per binade and at most 448: the float draws rounded, large magnitudes
// spread over 16-448.
template <>
__device__ __nv_fp8_e4m3 random_element<__nv_fp8_e4m3>(std::uint64_t seed, std::int64_t i, std::int64_t n,
                                                       Distribution d) {
  if (d != Distribution::large_magnitude) return __nv_fp8_e4m3(random_value(seed, i, n, d));
  const std::uint64_t bits = mix64(seed ^ mix64(static_cast<std::uint64_t>(i)));
  const float magnitude = 16.0f + 432.0f * unit_float(bits);
  return __nv_fp8_e4m3((mix64(bits) & 1) ? magnitude : -magnitude);
}

// Unsigned words over the whole range, with random_byte's all_equal and sorted cases.
template <typename T>
__device__ T random_unsigned(std::uint64_t seed, std::int64_t i, std::int64_t n, Distribution d) {
  constexpr double kTop = static_cast<double>(static_cast<T>(~T{0}));
  switch (d) {
    case Distribution::all_equal: return 7;
    case Distribution::sorted: return static_cast<T>(n > 1 ? kTop * static_cast<double>(i) / (n - 1) : 0);
    default: return static_cast<T>(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) >> (64 - 8 * sizeof(T)));
  }
}
template <>
__device__ std::uint16_t random_element<std::uint16_t>(std::uint64_t seed, std::int64_t i, std::int64_t n,
                                                       Distribution d) {
  return random_unsigned<std::uint16_t>(seed, i, n, d);
}
template <>
__device__ std::uint32_t random_element<std::uint32_t>(std::uint64_t seed, std::int64_t i, std::int64_t n,
                                                       Distribution d) {
  return random_unsigned<std::uint32_t>(seed, i, n, d);
}

template <typename T>
__global__ void fill_random_kernel(T* values, std::int64_t n, std::uint64_t seed, Distribution distribution) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride)
    values[i] = random_element<T>(seed, i, n, distribution);
}

template <typename T>
void launch_fill(T* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kBlockSize = 256;
  const int blocks = resident_grid_size(fill_random_kernel<T>, kBlockSize, n);
  fill_random_kernel<T><<<blocks, kBlockSize, 0, stream>>>(device_values, n, seed, distribution);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void fill_random(float* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution,
                 cudaStream_t stream) {
  launch_fill(device_values, n, seed, distribution, stream);
}

void fill_random(std::int32_t* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution,
                 cudaStream_t stream) {
  launch_fill(device_values, n, seed, distribution, stream);
}

void fill_random(std::uint8_t* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution,
                 cudaStream_t stream) {
  launch_fill(device_values, n, seed, distribution, stream);
}

void fill_random(DType dtype, void* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution,
                 cudaStream_t stream) {
  switch (dtype) {
    case DType::f32: return launch_fill(static_cast<float*>(device_values), n, seed, distribution, stream);
    case DType::f64: return launch_fill(static_cast<double*>(device_values), n, seed, distribution, stream);
    case DType::f16: return launch_fill(static_cast<__half*>(device_values), n, seed, distribution, stream);
    case DType::bf16: return launch_fill(static_cast<__nv_bfloat16*>(device_values), n, seed, distribution, stream);
    case DType::i32: return launch_fill(static_cast<std::int32_t*>(device_values), n, seed, distribution, stream);
    case DType::i64: return launch_fill(static_cast<std::int64_t*>(device_values), n, seed, distribution, stream);
    case DType::u8: return launch_fill(static_cast<std::uint8_t*>(device_values), n, seed, distribution, stream);
    case DType::u16: return launch_fill(static_cast<std::uint16_t*>(device_values), n, seed, distribution, stream);
    case DType::u32: return launch_fill(static_cast<std::uint32_t*>(device_values), n, seed, distribution, stream);
    case DType::e4m3: return launch_fill(static_cast<__nv_fp8_e4m3*>(device_values), n, seed, distribution, stream);
  }
}

void poison(void* device_bytes, std::size_t bytes, cudaStream_t stream, unsigned char pattern) {
  if (bytes == 0) return;
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(device_bytes, pattern, bytes, stream));
}

}  // namespace cudalab::harness
