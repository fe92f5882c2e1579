// Seeded, stateless random inputs: value i of a stream depends only on (seed, i, distribution), so
// the GPU fills gigabytes in milliseconds and the host can regenerate any element to check it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"

namespace cudalab::harness {

enum class Distribution {
  uniform,          // [-1, 1)
  normal,           // mean 0, standard deviation 1 (Box-Muller)
  integers,         // whole numbers in [-16, 16]: fp32 sums of them are exact
  all_equal,        // every element 0.75: worst case for contention, reveals index bugs
  sorted,           // increasing from -1 to 1
  large_magnitude,  // uniform magnitudes in [1e30, 1e32) with random sign
};

std::vector<Distribution> all_distributions();
const char* to_string(Distribution distribution);
bool parse_distribution(const std::string& text, Distribution* out);

// splitmix64: a bijective 64-bit mix; cheap and well distributed for counter-based streams.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 24 random bits (exactly representable in fp32).
__host__ __device__ inline float unit_float(std::uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

__host__ __device__ float random_value(std::uint64_t seed, std::int64_t index, std::int64_t count,
                                       Distribution distribution);

// Whole-number streams for integer ops. uniform and integers: [-16, 16] (sums of 2^27 of them
// stay inside int32); normal: a normal sample x 8, rounded; all_equal: 3; sorted: -16 to 16
// increasing; large_magnitude: any int32, so sums wrap around (two's complement, as CUB's do).
__host__ __device__ std::int32_t random_int(std::uint64_t seed, std::int64_t index, std::int64_t count,
                                            Distribution distribution);
// Bytes (histogram inputs): uniform over 0..255 for every distribution but all_equal (every byte
// 7: all of them hit one bin) and sorted (0 to 255 increasing).
__host__ __device__ std::uint8_t random_byte(std::uint64_t seed, std::int64_t index, std::int64_t count,
                                             Distribution distribution);

// Fill device memory with the streams above for i in [0, n).
// By dtype: f32 and bf16/f16 take random_value rounded to nearest (f16's large_magnitude draws
// from [1024, 65504), its own top binade range, since 1e30 overflows it); f64 takes random_value
// widened; i32 and i64 random_int; u8 random_byte; u16 and u32 uniform over the type's range
// (all_equal 7, sorted rising over the range).
void fill_random(DType dtype, void* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution,
                 cudaStream_t stream);
void fill_random(float* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution,
                 cudaStream_t stream);
void fill_random(std::int32_t* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution,
                 cudaStream_t stream);
void fill_random(std::uint8_t* device_values, std::int64_t n, std::uint64_t seed, Distribution distribution,
                 cudaStream_t stream);

// Poison patterns: 0xFF bytes make every float a NaN; integers get 0xABABABAB (-1414812757), a
// value no test input's sum, prefix sum or count reaches (unlike -1).
inline constexpr unsigned char kFloatPoisonByte = 0xFF;
inline constexpr unsigned char kIntegerPoisonByte = 0xAB;
inline unsigned char poison_byte(DType dtype) {
  return traits(dtype).is_integer ? kIntegerPoisonByte : kFloatPoisonByte;
}

// Fills device memory with a byte pattern, so an element a kernel forgot to write is detected by
// the check.
void poison(void* device_bytes, std::size_t bytes, cudaStream_t stream, unsigned char pattern = kFloatPoisonByte);

}  // namespace cudalab::harness
