#include "ops/convert/inputs.hpp"

#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "harness/random.hpp"

namespace cudalab::harness {
namespace {

constexpr int kBlockSize = 256;

// fp32 bit patterns of edge values, taken with either sign. No NaN here has an all-ones payload
// in its top 10 bits, so no conversion of it can be the all-ones poison pattern.
__constant__ std::uint32_t kEdgeBits[] = {
    0x00000000,                                      // zero
    0x7F800000,                                      // infinity
    0x7FC00000, 0x7F800001, 0x7FC02000,              // NaNs: quiet, signalling, with a payload
    0x00000001, 0x007FFFFF, 0x00800000,              // fp32: smallest and largest subnormal, smallest normal
    0x7F7FFFFF,                                      // fp32's largest (bf16: rounds up to infinity)
    0x7F7F7FFF, 0x7F7F8000,                          // bf16: below and at the tie of its largest and infinity
    0x00010000, 0x00008000, 0x00018000,              // bf16: smallest subnormal, ties to 0 and to 2 units
    0x3F800000, 0x3F808000, 0x3F818000,              // 1; bf16 ties at 1 + 2^-8 (down), 1 + 3*2^-8 (up)
    0x3F801000, 0x3F803000,                          // fp16 ties at 1 + 2^-11 (down), 1 + 3*2^-11 (up)
    0x477FE000, 0x477FEFFF, 0x477FF000, 0x47800000,  // fp16: 65504, below and at the tie with inf, 65536
    0x33800000, 0x33000000, 0x33000001,              // fp16: 2^-24 (smallest), 2^-25 (tie to 0), above it
    0x33C00000, 0x34200000,                          // fp16: 1.5 and 2.5 units of 2^-24 (both to 2 units)
    0x387FC000, 0x387FE000, 0x38800000,              // fp16: largest subnormal, its tie with 2^-14, 2^-14
};
constexpr std::uint32_t kEdgeCount = sizeof(kEdgeBits) / sizeof(kEdgeBits[0]);

// The 16-bit format as fp32 sees it: its largest finite magnitude, the fp32 exponents (biased) of
// the random values, and the fp32 bits of magnitude h and of the tie between h and the next one up.
template <typename T>
struct Format;

template <>
struct Format<__half> {
  static constexpr std::uint16_t kMaxFinite = 0x7BFF;  // 65504
  static constexpr std::uint32_t kLowExponent = 100;   // 2^-27
  static constexpr std::uint32_t kHighExponent = 144;  // 2^17
  static __device__ std::uint32_t bits(std::uint16_t h) { return __float_as_uint(__half2float(__ushort_as_half(h))); }
  static __device__ std::uint32_t tie_above(std::uint16_t h) {
    // A normal value's ulp is bit 13 of its fp32 mantissa, so half of it is bit 12; a subnormal
    // h * 2^-24 has its tie at (2h + 1) * 2^-25, a normal fp32 value (exact).
    if (h >= 0x0400) return bits(h) + 0x1000;
    return __float_as_uint(static_cast<float>(2 * h + 1) * 0x1p-25f);
  }
};

template <>
struct Format<__nv_bfloat16> {
  static constexpr std::uint16_t kMaxFinite = 0x7F7F;
  static constexpr std::uint32_t kLowExponent = 0;  // fp32 subnormals
  static constexpr std::uint32_t kHighExponent = 254;
  // bf16 is fp32's top half; the tie sets the top bit of the bottom half.
  static __device__ std::uint32_t bits(std::uint16_t h) { return static_cast<std::uint32_t>(h) << 16; }
  static __device__ std::uint32_t tie_above(std::uint16_t h) { return bits(h) | 0x8000; }
};

// Element i of the narrowing stream, in the mix inputs.hpp describes; the low 3 bits of `a` pick
// the kind.
template <typename T>
__device__ float narrowing_input(std::uint64_t seed, std::int64_t i) {
  using F = Format<T>;
  const std::uint64_t a = mix64(seed ^ mix64(static_cast<std::uint64_t>(i)));
  const std::uint64_t b = mix64(a);
  const std::uint32_t sign = static_cast<std::uint32_t>(a >> 63) << 31;
  const auto pick = static_cast<std::uint32_t>(a >> 8);
  const auto h = static_cast<std::uint16_t>(pick % (F::kMaxFinite + 1u));
  std::uint32_t magnitude = 0;
  switch (a & 7) {
    case 0: magnitude = kEdgeBits[pick % kEdgeCount]; break;
    case 1: magnitude = F::tie_above(h); break;
    case 2: magnitude = (a >> 40) & 1 ? F::tie_above(h) + 1 : F::tie_above(h) - 1; break;
    case 3: magnitude = F::bits(h); break;
    default: {
      const auto exponent =
          F::kLowExponent + static_cast<std::uint32_t>(b >> 32) % (F::kHighExponent - F::kLowExponent + 1);
      magnitude = (exponent << 23) | (static_cast<std::uint32_t>(b) & 0x7FFFFF);
      break;
    }
  }
  return __uint_as_float(sign | magnitude);
}

template <typename T>
__global__ void fill_narrowing_kernel(float* values, std::int64_t n, std::uint64_t seed) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) values[i] = narrowing_input<T>(seed, i);
}

__global__ void fill_widening_kernel(std::uint16_t* values, std::int64_t n, std::uint64_t seed) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride)
    values[i] = static_cast<std::uint16_t>(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) >> 48);
}

template <typename T>
void launch_narrowing(float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  const int blocks = resident_grid_size(fill_narrowing_kernel<T>, kBlockSize, n);
  fill_narrowing_kernel<T><<<blocks, kBlockSize, 0, stream>>>(device, n, seed);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void fill_narrowing_inputs(float* device, std::int64_t n, std::uint64_t seed, DType half_dtype, cudaStream_t stream) {
  CUDALAB_REQUIRE(half_dtype == DType::f16 || half_dtype == DType::bf16,
                  std::string("convert inputs: no 16-bit float type ") + to_string(half_dtype));
  if (n == 0) return;
  if (half_dtype == DType::f16) {
    launch_narrowing<__half>(device, n, seed, stream);
  } else {
    launch_narrowing<__nv_bfloat16>(device, n, seed, stream);
  }
}

void fill_widening_inputs(void* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = resident_grid_size(fill_widening_kernel, kBlockSize, n);
  fill_widening_kernel<<<blocks, kBlockSize, 0, stream>>>(static_cast<std::uint16_t*>(device), n, seed);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::harness
