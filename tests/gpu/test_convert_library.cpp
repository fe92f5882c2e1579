// cudalab::convert as a program would call it: both directions for fp16 and bf16, at any
// alignment (the vector kernel's scalar head and tail, and the scalar kernel when the two arrays
// never share a 16-byte boundary), n == 0, every 16-bit pattern; nothing outside y is written.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cudalab/convert.hpp"
#include "cudalab/memory.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/convert/inputs.hpp"
#include "ops/convert/reference.hpp"

namespace cudalab {
namespace {

constexpr std::uint64_t kSeed = 0xC0FFEE;

void fill_inputs(float* x, std::int64_t n, DType half_dtype, cudaStream_t stream) {
  harness::fill_narrowing_inputs(x, n, kSeed, half_dtype, stream);
}

template <typename T>
void fill_inputs(T* x, std::int64_t n, DType, cudaStream_t stream) {
  harness::fill_widening_inputs(x, n, kSeed, stream);
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer<T>& buffer, cudaStream_t stream) {
  std::vector<T> host(static_cast<std::size_t>(buffer.size()));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost, stream));
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// Converts n elements starting `x_offset` and `y_offset` elements into their buffers (one of
// From and To is the 16-bit type `half_dtype`), checks them bit-exactly and checks that the
// poison around y's range is untouched.
template <typename From, typename To>
void check_at_offsets(DType half_dtype, std::int64_t n, std::int64_t x_offset, std::int64_t y_offset) {
  SCOPED_TRACE(testing::Message() << to_string(dtype_of_v<From>) << " -> " << to_string(dtype_of_v<To>) << ", n " << n
                                  << ", offsets " << x_offset << " and " << y_offset);
  const std::int64_t room = n + 16;
  DeviceBuffer<From> x(room);
  DeviceBuffer<To> y(room);
  Stream stream;
  fill_inputs(x.data(), room, half_dtype, stream.get());
  harness::poison(y.data(), y.bytes(), stream.get());
  convert(x.data() + x_offset, y.data() + y_offset, n, stream.get());
  const std::vector<From> hx = to_host(x, stream.get());
  const std::vector<To> hy = to_host(y, stream.get());
  const harness::Comparison c =
      harness::check_conversion(dtype_of_v<From>, hx.data() + x_offset, dtype_of_v<To>, hy.data() + y_offset, n);
  EXPECT_TRUE(c.passed()) << c.summary();
  const auto* bytes = reinterpret_cast<const unsigned char*>(hy.data());
  for (std::int64_t b = 0; b < static_cast<std::int64_t>(y.bytes()); ++b) {
    const bool inside = b >= y_offset * static_cast<std::int64_t>(sizeof(To)) &&
                        b < (y_offset + n) * static_cast<std::int64_t>(sizeof(To));
    if (!inside) {
      ASSERT_EQ(bytes[b], harness::kFloatPoisonByte) << "wrote outside y at byte " << b;
    }
  }
}

// Offsets (in elements) of x and y: both aligned; both at the same 16-byte phase (a head, then
// vectors); phases that meet after a few elements; and phases that never meet (scalar kernel).
constexpr std::int64_t kOffsets[][2] = {{0, 0}, {1, 1}, {7, 7}, {2, 6}, {1, 0}, {0, 3}, {3, 2}};

template <typename From, typename To>
void check_everywhere(DType half_dtype) {
  for (const auto& offsets : kOffsets)
    for (std::int64_t n : {0, 1, 3, 7, 8, 9, 17, 1000003})
      check_at_offsets<From, To>(half_dtype, n, offsets[0], offsets[1]);
}

TEST(LibraryConvert, NarrowsToFp16AtAnyAlignment) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_everywhere<float, __half>(DType::f16);
}

TEST(LibraryConvert, NarrowsToBf16AtAnyAlignment) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_everywhere<float, __nv_bfloat16>(DType::bf16);
}

TEST(LibraryConvert, WidensFp16AtAnyAlignment) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_everywhere<__half, float>(DType::f16);
}

TEST(LibraryConvert, WidensBf16AtAnyAlignment) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_everywhere<__nv_bfloat16, float>(DType::bf16);
}

// All 65536 patterns, then back: widening is exact, and narrowing an exactly representable value
// gives its pattern again (NaNs give some NaN).
template <typename T>
void check_every_pattern_round_trips() {
  const std::int64_t n = 1 << 16;
  std::vector<std::uint16_t> patterns(n);
  for (std::int64_t i = 0; i < n; ++i) patterns[i] = static_cast<std::uint16_t>(i);
  DeviceBuffer<T> half(n), back(n);
  DeviceBuffer<float> wide(n);
  CUDALAB_CUDA_CHECK(cudaMemcpy(half.data(), patterns.data(), half.bytes(), cudaMemcpyHostToDevice));
  convert(half.data(), wide.data(), n);
  convert(wide.data(), back.data(), n);
  const std::vector<float> hw = to_host(wide, nullptr);
  const std::vector<T> hb = to_host(back, nullptr);
  const DType dtype = dtype_of_v<T>;
  const harness::Comparison widened = harness::check_conversion(dtype, patterns.data(), DType::f32, hw.data(), n);
  EXPECT_TRUE(widened.passed()) << widened.summary();
  const harness::Comparison narrowed = harness::check_conversion(DType::f32, hw.data(), dtype, hb.data(), n);
  EXPECT_TRUE(narrowed.passed()) << narrowed.summary();
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint16_t got;
    std::memcpy(&got, &hb[i], sizeof got);
    if (!std::isnan(element_to_double(dtype, patterns.data(), i))) {
      ASSERT_EQ(got, patterns[i]) << std::hex << i;
    }
  }
}

TEST(LibraryConvert, EveryFp16PatternRoundTrips) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_pattern_round_trips<__half>();
}

TEST(LibraryConvert, EveryBf16PatternRoundTrips) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_pattern_round_trips<__nv_bfloat16>();
}

}  // namespace
}  // namespace cudalab
