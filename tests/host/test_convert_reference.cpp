// The convert op without a GPU: the host rounding its check relies on (cudalab/dtype.hpp's
// conversions) against an independent round-to-nearest-even, the bit-exact check itself, its
// registry entry, and the library call's argument checks (which come before any CUDA call).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "error_kind.hpp"

#include "cudalab/convert.hpp"
#include "cudalab/dtype.hpp"
#include "cudalab/error.hpp"
#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "harness/workload.hpp"
#include "ops/convert/ids.hpp"
#include "ops/convert/reference.hpp"

namespace cudalab::harness {
namespace {

float from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

std::uint16_t narrowed_bits(DType dtype, float x) {
  std::uint16_t bits;
  element_from_double(dtype, x, &bits, 0);
  return bits;
}

// x rounded to nearest even with `digits` significant bits, exponents down to `min_exponent`
// (below it, a fixed quantum: subnormals) and overflow past `max_finite` to infinity, computed in
// double with std::nearbyint (the default rounding mode is to nearest, ties to even).
double round_to_nearest_even(double x, int digits, int min_exponent, double max_finite) {
  if (x == 0 || std::isinf(x)) return x;
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| = m * 2^exponent, m in [0.5, 1)
  const double quantum = std::ldexp(1.0, std::max(exponent - 1, min_exponent) - (digits - 1));
  const double rounded = std::nearbyint(x / quantum) * quantum;
  if (std::fabs(rounded) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return rounded;
}

double independent_narrowing(DType dtype, float x) {
  if (dtype == DType::f16) return round_to_nearest_even(x, 11, -14, 65504.0);
  return round_to_nearest_even(x, 8, -126, std::ldexp(255.0, 120));  // bf16: (2 - 2^-7) * 2^127
}

// Bits of x's fp32 value with exponent field in [low, high] and a random mantissa and sign.
float random_float(std::uint64_t r, std::uint32_t low, std::uint32_t high) {
  const auto exponent = low + static_cast<std::uint32_t>(r >> 32) % (high - low + 1);
  return from_bits((static_cast<std::uint32_t>(r >> 63) << 31) | (exponent << 23) |
                   (static_cast<std::uint32_t>(r) & 0x7FFFFF));
}

TEST(ConvertReference, HostRoundingGetsTheEdgeCasesRight) {
  struct Case {
    std::uint32_t f32;
    std::uint16_t f16;
    std::uint16_t bf16;
  };
  const Case cases[] = {
      {0x00000000, 0x0000, 0x0000},  // zero
      {0x80000000, 0x8000, 0x8000},  // negative zero keeps its sign
      {0x7F800000, 0x7C00, 0x7F80},  // infinity
      {0x3F800000, 0x3C00, 0x3F80},  // 1
      {0x3F801000, 0x3C00, 0x3F80},  // fp16 tie at 1 + 2^-11: down to even
      {0x3F803000, 0x3C02, 0x3F80},  // fp16 tie at 1 + 3 * 2^-11: up to even
      {0x3F808000, 0x3C04, 0x3F80},  // bf16 tie at 1 + 2^-8: down to even
      {0x3F818000, 0x3C0C, 0x3F82},  // bf16 tie at 1 + 3 * 2^-8: up to even
      {0x477FE000, 0x7BFF, 0x4780},  // 65504, fp16's largest (bf16: 65536, rounded up)
      {0x477FEFFF, 0x7BFF, 0x4780},  // just below the fp16 tie with infinity
      {0x477FF000, 0x7C00, 0x4780},  // the tie: to infinity, the even side
      {0xC77FF000, 0xFC00, 0xC780},  // and its negative
      {0x7F7FFFFF, 0x7C00, 0x7F80},  // fp32's largest: infinity in both
      {0x7F7F7FFF, 0x7C00, 0x7F7F},  // just below the bf16 tie with infinity
      {0x33800000, 0x0001, 0x3380},  // 2^-24, fp16's smallest subnormal
      {0x33000000, 0x0000, 0x3300},  // 2^-25: tie with zero, to zero
      {0x33000001, 0x0001, 0x3300},  // just above: to 2^-24
      {0x33C00000, 0x0002, 0x33C0},  // 1.5 units: tie, to 2 units
      {0x34200000, 0x0002, 0x3420},  // 2.5 units: tie, to 2 units
      {0x387FE000, 0x0400, 0x3880},  // the tie between fp16's largest subnormal and 2^-14: to 2^-14
      {0x00010000, 0x0000, 0x0001},  // bf16's smallest subnormal (fp16: zero)
      {0x00008000, 0x0000, 0x0000},  // the bf16 tie with zero: to zero
      {0x00018000, 0x0000, 0x0002},  // 1.5 bf16 units: to 2
      {0x00000001, 0x0000, 0x0000},  // fp32's smallest subnormal
  };
  for (const Case& c : cases) {
    EXPECT_EQ(narrowed_bits(DType::f16, from_bits(c.f32)), c.f16) << std::hex << c.f32;
    EXPECT_EQ(narrowed_bits(DType::bf16, from_bits(c.f32)), c.bf16) << std::hex << c.f32;
  }
  for (DType dtype : {DType::f16, DType::bf16}) {
    const std::uint16_t bits = narrowed_bits(dtype, std::numeric_limits<float>::quiet_NaN());
    EXPECT_TRUE(std::isnan(element_to_double(dtype, &bits, 0))) << to_string(dtype);
  }
}

// A million random fp32 values over each format's exponents and past them, and a tie and its two
// fp32 neighbours around every 16-bit magnitude: dtype.hpp's rounding equals the independent one.
TEST(ConvertReference, HostRoundingMatchesAnIndependentRoundToNearestEven) {
  for (DType dtype : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(to_string(dtype));
    const std::uint32_t low = dtype == DType::f16 ? 100 : 0, high = dtype == DType::f16 ? 144 : 254;
    std::vector<float> values;
    for (std::uint64_t i = 0; i < 1000000; ++i) values.push_back(random_float(mix64(i), low, high));
    // Magnitude h's value, for h up to the first NaN pattern (infinity's bits + 1).
    std::vector<double> magnitudes;
    for (std::uint16_t h = 0; magnitudes.empty() || !std::isinf(magnitudes.back()); ++h)
      magnitudes.push_back(element_to_double(dtype, &h, 0));
    for (std::size_t h = 0; h + 1 < magnitudes.size(); ++h) {
      // The tie above the largest finite value sits half its ulp below it further up.
      const double above = std::isinf(magnitudes[h + 1]) ? 2 * magnitudes[h] - magnitudes[h - 1] : magnitudes[h + 1];
      const float tie = static_cast<float>((magnitudes[h] + above) / 2);
      values.insert(values.end(), {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, INFINITY), -tie});
    }
    for (float x : values) {
      const std::uint16_t bits = narrowed_bits(dtype, x);
      const double got = element_to_double(dtype, &bits, 0);
      const double want = independent_narrowing(dtype, x);
      ASSERT_TRUE(got == want && std::signbit(got) == std::signbit(want))
          << "x = " << x << " (bits " << std::hex << bits_of(x) << "): got " << got << ", want " << want;
    }
  }
}

// Outputs of both directions, as the GPU should write them, for check_conversion.
struct Converted {
  std::vector<float> wide;
  std::vector<std::uint16_t> narrow;
};

Converted narrowed(DType dtype, const std::vector<float>& x) {
  Converted c{x, std::vector<std::uint16_t>(x.size())};
  for (std::size_t i = 0; i < x.size(); ++i) c.narrow[i] = narrowed_bits(dtype, x[i]);
  return c;
}

TEST(ConvertReference, CheckPassesExactBitsAndAnyNanForANan) {
  const std::vector<float> x = {
      1.0f,    -0.0f, from_bits(0x477FF000), from_bits(0x7FC00000), from_bits(0xFF800001), from_bits(0x33000000),
      INFINITY};
  for (DType dtype : {DType::f16, DType::bf16}) {
    Converted c = narrowed(dtype, x);
    EXPECT_TRUE(check_conversion(DType::f32, c.wide.data(), dtype, c.narrow.data(), 7).passed());
    c.narrow[3] = 0xFFC1;  // other NaNs than the canonical one: a NaN is all a NaN must give
    c.narrow[4] = 0x7F81;
    const Comparison nan_payloads = check_conversion(DType::f32, c.wide.data(), dtype, c.narrow.data(), 7);
    EXPECT_TRUE(nan_payloads.passed()) << nan_payloads.summary();
    // Widening: 16-bit inputs of every kind, exact fp32 outputs.
    std::vector<float> wide(7);
    for (std::size_t i = 0; i < 7; ++i) wide[i] = static_cast<float>(element_to_double(dtype, c.narrow.data(), i));
    EXPECT_TRUE(check_conversion(dtype, c.narrow.data(), DType::f32, wide.data(), 7).passed());
  }
}

TEST(ConvertReference, CheckFailsAWrongSignedZeroAnUlpANonNanAndAnUnwrittenElement) {
  const std::vector<float> x = {-0.0f, 1.0f, from_bits(0x7FC00000), 3.0f, from_bits(0x7FC00000)};
  for (DType dtype : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(to_string(dtype));
    Converted c = narrowed(dtype, x);
    c.narrow[0] = 0x0000;                                       // +0 for -0
    c.narrow[1] = static_cast<std::uint16_t>(c.narrow[1] + 1);  // one ulp off
    c.narrow[2] = dtype == DType::f16 ? 0x7C00 : 0x7F80;        // infinity for a NaN
    c.narrow[4] = 0xFFFF;                                       // the poison: never written, though a NaN
    const Comparison r = check_conversion(DType::f32, c.wide.data(), dtype, c.narrow.data(), 5);
    EXPECT_EQ(r.mismatches, 4) << r.summary();
    EXPECT_EQ(r.unwritten, 1);
    EXPECT_EQ(r.first_mismatch, 0);
    // Widening: an fp32 output still all-ones was never written.
    const std::vector<std::uint16_t> half = {0x3C00, 0x7E00};
    std::vector<float> wide = {static_cast<float>(element_to_double(dtype, half.data(), 0)), from_bits(0xFFFFFFFF)};
    const Comparison w = check_conversion(dtype, half.data(), DType::f32, wide.data(), 2);
    EXPECT_EQ(w.mismatches, 1);
    EXPECT_EQ(w.unwritten, 1);
  }
}

// Every 16-bit pattern widens to fp32 exactly: bf16 is fp32's top half, fp16 is (1024 + m) *
// 2^(e - 25) for exponent field e > 0 and m * 2^-24 for e == 0. Against these independent values
// the check passes, and it fails each pattern's neighbour.
TEST(ConvertReference, CheckOfEveryWidenedPatternAgreesWithTheFormats) {
  std::vector<std::uint16_t> patterns(1 << 16);
  for (std::size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<std::uint16_t>(i);
  for (DType dtype : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(to_string(dtype));
    std::vector<float> wide(patterns.size());
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      const std::uint32_t h = patterns[i], sign = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
      if (dtype == DType::bf16) {
        wide[i] = from_bits(h << 16);
      } else if (e == 0x1F) {
        wide[i] = m == 0 ? (sign ? -INFINITY : INFINITY) : NAN;
      } else {
        const double magnitude = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024.0 + m, static_cast<int>(e) - 25);
        wide[i] = static_cast<float>(sign ? -magnitude : magnitude);
      }
    }
    const auto n = static_cast<std::int64_t>(patterns.size());
    const Comparison r = check_conversion(dtype, patterns.data(), DType::f32, wide.data(), n);
    EXPECT_TRUE(r.passed()) << r.summary();
    // One bit off fails every non-NaN (an infinity becomes a NaN); a NaN stays a NaN and passes.
    const std::int64_t nans = std::count_if(wide.begin(), wide.end(), [](float w) { return std::isnan(w); });
    for (float& w : wide)
      if (!std::isnan(w)) w = from_bits(bits_of(w) ^ 1);
    EXPECT_EQ(check_conversion(dtype, patterns.data(), DType::f32, wide.data(), n).mismatches, n - nans);
  }
}

// One op for both directions: each direction's pair of tensors is live, the other empty, and the
// work model counts 4 + 2 bytes an element either way.
TEST(ConvertRegistry, DirectionPicksTheLiveTensorsAndTheTraffic) {
  const Op* op = builtin_registry().find_op(convert_ids::kOp);
  ASSERT_NE(op, nullptr);
  for (DType dtype : {DType::f16, DType::bf16}) {
    for (double direction : {0.0, 1.0}) {
      const Problem p = op->problem({1000}, dtype, {{convert_ids::kDirection, direction}});
      const Work w = op->work(p);
      EXPECT_DOUBLE_EQ(w.bytes_read + w.bytes_written, 6000);
      EXPECT_DOUBLE_EQ(w.bytes_read, direction == 0 ? 4000 : 2000);
      EXPECT_EQ(workload_device_bytes(*op, p, {}), 6000u);
      for (const Variant& v : op->variants) EXPECT_EQ(why_not(v, DeviceInfo{}, p), "") << v.id;
    }
    const Problem bad = op->problem({1000}, dtype, {{convert_ids::kDirection, 2}});
    for (const Variant& v : op->variants) EXPECT_NE(why_not(v, DeviceInfo{}, bad), "") << v.id;
  }
  std::set<std::string> tested;
  for (const Problem& p : op->test_problems)
    tested.insert(std::string(to_string(p.dtype)) + format_param(p.param(convert_ids::kDirection)) + "/" +
                  std::to_string(p.dim("n")));
  for (const char* key : {"f160/0", "bf161/0", "f161/1000003", "bf160/16777221"}) EXPECT_TRUE(tested.count(key)) << key;
}

TEST(ConvertLibrary, ValidatesBeforeTouchingTheGpu) {
  using test_support::thrown_kind;
  auto* f32 = reinterpret_cast<float*>(std::uintptr_t{0x10000});
  auto* f16 = reinterpret_cast<__half*>(std::uintptr_t{0x20000});
  auto* bf16 = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x20000});
  EXPECT_EQ(thrown_kind([&] { convert(f32, f16, -1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { convert(static_cast<const float*>(nullptr), bf16, 5); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { convert(f16, static_cast<float*>(nullptr), 5); }), ErrorKind::invalid_argument);
  EXPECT_NO_THROW(convert(static_cast<const __nv_bfloat16*>(nullptr), static_cast<float*>(nullptr), 0));
  // Not aligned to the element: an fp32 pointer 2 bytes in, a 16-bit one 1 byte in.
  EXPECT_EQ(thrown_kind([&] { convert(reinterpret_cast<const float*>(std::uintptr_t{0x10002}), f16, 5); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { convert(reinterpret_cast<const __nv_bfloat16*>(std::uintptr_t{0x20001}), f32, 5); }),
            ErrorKind::invalid_argument);
  // Overlapping arrays: 8 floats from 0x10000 reach 0x10020; 8 halves from 0x10010 start inside.
  EXPECT_EQ(thrown_kind([&] { convert(f32, reinterpret_cast<__half*>(std::uintptr_t{0x10010}), 8); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { convert(reinterpret_cast<const __half*>(std::uintptr_t{0x10010}), f32, 8); }),
            ErrorKind::invalid_argument);
}

}  // namespace
}  // namespace cudalab::harness
