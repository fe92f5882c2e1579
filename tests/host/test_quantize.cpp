// The FP8 quantization's library entry refuses bad arguments before anything touches the GPU, and
// the resident rung's capacity rule.
#include <cstdint>

#include <gtest/gtest.h>

#include "cudalab/quantize.hpp"
#include "error_kind.hpp"
#include "ops/quantize/variants.hpp"

namespace cudalab {
namespace {

using test_support::thrown_kind;

TEST(QuantizeLibrary, ValidatesBeforeTouchingTheGpu) {
  auto* x = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x10000});
  auto* q = reinterpret_cast<__nv_fp8_e4m3*>(std::uintptr_t{0x20000});
  auto* scale = reinterpret_cast<float*>(std::uintptr_t{0x30000});
  auto* amax = reinterpret_cast<float*>(std::uintptr_t{0x30010});
  EXPECT_EQ(thrown_kind([&] { quantize_fp8(x, q, scale, amax, -1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { quantize_fp8<__nv_bfloat16>(nullptr, q, scale, amax, 4); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { quantize_fp8(x, static_cast<__nv_fp8_e4m3*>(nullptr), scale, amax, 4); }),
            ErrorKind::invalid_argument);
  // scale and amax are written even for n = 0, so they are never optional.
  EXPECT_EQ(thrown_kind([&] { quantize_fp8<__nv_bfloat16>(nullptr, nullptr, nullptr, amax, 0); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { quantize_fp8(x, q, scale, reinterpret_cast<float*>(std::uintptr_t{0x30002}), 4); }),
            ErrorKind::invalid_argument);  // amax misaligned
  EXPECT_EQ(
      thrown_kind([&] { quantize_fp8(reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x10001}), q, scale, amax, 4); }),
      ErrorKind::invalid_argument);  // x misaligned
  EXPECT_EQ(thrown_kind([&] { quantize_fp8(x, reinterpret_cast<__nv_fp8_e4m3*>(x) + 2, scale, amax, 4); }),
            ErrorKind::invalid_argument);                                                             // q overlaps x
  EXPECT_EQ(thrown_kind([&] { quantize_fp8(x, q, scale, scale, 4); }), ErrorKind::invalid_argument);  // one float
}

TEST(QuantizeLibrary, ScaledValidatesBeforeTouchingTheGpu) {
  auto* x = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x10000});
  auto* q = reinterpret_cast<__nv_fp8_e4m3*>(std::uintptr_t{0x20000});
  const auto* scale = reinterpret_cast<const float*>(std::uintptr_t{0x30000});
  auto* amax = reinterpret_cast<float*>(std::uintptr_t{0x30010});
  EXPECT_EQ(thrown_kind([&] { quantize_fp8_scaled(x, scale, q, amax, -1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { quantize_fp8_scaled(x, static_cast<const float*>(nullptr), q, amax, 4); }),
            ErrorKind::invalid_argument);  // the scale is an input, never optional
  EXPECT_EQ(thrown_kind([&] { quantize_fp8_scaled(x, scale, q, static_cast<float*>(nullptr), 0); }),
            ErrorKind::invalid_argument);  // amax is written even for n = 0
  EXPECT_EQ(thrown_kind([&] { quantize_fp8_scaled(x, scale, reinterpret_cast<__nv_fp8_e4m3*>(x) + 2, amax, 4); }),
            ErrorKind::invalid_argument);  // q overlaps x
  EXPECT_EQ(thrown_kind([&] { quantize_fp8_scaled(x, scale, q, const_cast<float*>(scale), 4); }),
            ErrorKind::invalid_argument);  // amax on the scale
}

TEST(QuantizeResident, CapacityIsWholeChunksOfSharedMemoryLessTheReductionsPerSm) {
  namespace v = quantize_variants;
  // 227 KiB opt-in (Hopper) less 1 KiB: 115712 bf16 elements a block, a multiple of 16.
  EXPECT_EQ(v::resident_capacity(132, 232448, 2), 132 * 115712);
  EXPECT_EQ(v::resident_capacity(1, 1024 + 4 * 16 + 3 * 4, 4), 16);  // the partial chunk is dropped
  EXPECT_EQ(v::resident_capacity(132, 1024, 2), 0);
  EXPECT_EQ(v::resident_capacity(0, 232448, 2), 0);
}

}  // namespace
}  // namespace cudalab
