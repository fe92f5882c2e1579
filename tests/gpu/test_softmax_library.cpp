// cudalab::softmax and cudalab::softmax_backward as a program would call them, for fp32, fp16 and
// bf16: every width class the calls choose a rung by (lane groups, a warp, a block, the cluster or
// the register rung past 16384 when rows are not 16-byte multiples, the online and two-pass rungs
// past what registers hold), rows that
// are not 16-byte multiples, arrays that start off a 16-byte boundary (the scalar paths), rows of
// one value dominating and rows offset by +-1e4 (the test inputs' row kinds), empty shapes; and
// nothing outside the output is written.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "cudalab/memory.hpp"
#include "cudalab/softmax.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/softmax/inputs.hpp"
#include "ops/softmax/reference.hpp"

namespace cudalab {
namespace {

constexpr std::uint64_t kSeed = 0x50F7;

template <typename T>
std::vector<unsigned char> to_host(const DeviceBuffer<T>& buffer, cudaStream_t stream) {
  std::vector<unsigned char> host(buffer.bytes());
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost, stream));
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// Fails when a byte of `out` outside elements [offset, offset + n) is not the poison pattern.
void expect_untouched_outside(const std::vector<unsigned char>& out, std::size_t element, std::int64_t offset,
                              std::int64_t n) {
  const auto begin = static_cast<std::size_t>(offset) * element, end = static_cast<std::size_t>(offset + n) * element;
  for (std::size_t b = 0; b < out.size(); ++b) {
    if (b < begin || b >= end) {
      ASSERT_EQ(out[b], harness::kFloatPoisonByte) << "wrote outside the output at byte " << b;
    }
  }
}

// Shapes (rows, features) and the element offset of every array from its allocation (0: 16-byte
// aligned; 1: element-aligned only, so every rung takes its scalar path).
struct Case {
  std::int64_t rows;
  std::int64_t features;
  std::int64_t offset;
};

const std::vector<Case> kCases = {{0, 5, 0},     {5, 0, 0},      {1, 1, 0},      {3, 7, 0},     {9, 33, 1},
                                  {300, 256, 0}, {300, 1000, 0}, {300, 1000, 1}, {8, 4097, 0},  {6, 8192, 1},
                                  {4, 16384, 0}, {5, 16392, 0},  {3, 20001, 0},  {3, 32768, 0}, {3, 32769, 0},
                                  {3, 65536, 0}, {3, 65536, 1},  {2, 262144, 0}, {2, 262151, 0}};

std::string label(const Case& c, harness::Distribution distribution) {
  return std::to_string(c.rows) + " x " + std::to_string(c.features) + ", offset " + std::to_string(c.offset) + ", " +
         harness::to_string(distribution);
}

template <typename T>
void check_forward(const Case& c, harness::Distribution distribution) {
  SCOPED_TRACE(std::string(to_string(dtype_of_v<T>)) + " " + label(c, distribution));
  const std::int64_t n = c.rows * c.features, room = n + c.offset + 8;
  DeviceBuffer<T> x(room), y(room);
  Stream stream;
  harness::fill_softmax_logits(dtype_of_v<T>, x.data() + c.offset, c.rows, c.features, kSeed, distribution,
                               stream.get());
  harness::poison(y.data(), y.bytes(), stream.get());
  softmax(x.data() + c.offset, y.data() + c.offset, c.rows, c.features, stream.get());
  const std::vector<unsigned char> hx = to_host(x, stream.get()), hy = to_host(y, stream.get());
  const harness::Comparison result = harness::check_softmax(dtype_of_v<T>, hx.data() + c.offset * sizeof(T),
                                                            hy.data() + c.offset * sizeof(T), c.rows, c.features);
  EXPECT_TRUE(result.passed()) << result.summary();
  expect_untouched_outside(hy, sizeof(T), c.offset, n);
}

template <typename T>
void check_backward(const Case& c, harness::Distribution distribution) {
  SCOPED_TRACE(std::string(to_string(dtype_of_v<T>)) + " " + label(c, distribution));
  const std::int64_t n = c.rows * c.features, room = n + c.offset + 8;
  DeviceBuffer<T> y(room), dy(room), dx(room);
  Stream stream;
  harness::fill_softmax_outputs(dtype_of_v<T>, y.data() + c.offset, c.rows, c.features, kSeed, distribution,
                                stream.get());
  harness::fill_random(dtype_of_v<T>, dy.data() + c.offset, n, kSeed + 1, distribution, stream.get());
  harness::poison(dx.data(), dx.bytes(), stream.get());
  softmax_backward(y.data() + c.offset, dy.data() + c.offset, dx.data() + c.offset, c.rows, c.features, stream.get());
  const auto hy = to_host(y, stream.get()), hdy = to_host(dy, stream.get()), hdx = to_host(dx, stream.get());
  const std::size_t skip = static_cast<std::size_t>(c.offset) * sizeof(T);
  const harness::Comparison result = harness::check_softmax_backward(dtype_of_v<T>, hy.data() + skip, hdy.data() + skip,
                                                                     hdx.data() + skip, c.rows, c.features);
  EXPECT_TRUE(result.passed()) << result.summary();
  expect_untouched_outside(hdx, sizeof(T), c.offset, n);
}

void check_every_case(void (*check)(const Case&, harness::Distribution)) {
  for (const Case& c : kCases)
    for (harness::Distribution d : {harness::Distribution::uniform, harness::Distribution::normal}) check(c, d);
}

TEST(LibrarySoftmax, EveryElementTypeWidthClassAndAlignment) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for_each_element(SoftmaxElements{}, [](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    SCOPED_TRACE(to_string(dtype_of_v<T>));
    check_every_case(check_forward<T>);
  });
}

TEST(LibrarySoftmaxBackward, EveryElementTypeWidthClassAndAlignment) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for_each_element(SoftmaxElements{}, [](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    SCOPED_TRACE(to_string(dtype_of_v<T>));
    check_every_case(check_backward<T>);
  });
}

// Large-magnitude logits (1e30-1e32; fp16's 1024-65504) of random sign: one value per row wins,
// and a rung that exponentiates before subtracting the max gives NaN.
TEST(LibrarySoftmax, LargeMagnitudeRowsGiveOneHotOutputs) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for (const Case& c : {Case{64, 1000, 0}, Case{3, 65536, 0}}) {
    check_forward<float>(c, harness::Distribution::large_magnitude);
    check_forward<__half>(c, harness::Distribution::large_magnitude);
    check_forward<__nv_bfloat16>(c, harness::Distribution::large_magnitude);
  }
}

}  // namespace
}  // namespace cudalab
