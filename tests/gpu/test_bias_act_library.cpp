// cudalab::bias_act and bias_act_backward as a program would call them: every dtype and
// activation, rows 16-byte aligned or not, arrays at offsets that break the 16-byte alignment
// (the vector-gather and scalar paths), no rows, no features; nothing outside the outputs is
// written; the backward's two workspace forms agree bit for bit and repeat bit for bit; every finite
// 16-bit input value; bias_gradient's column sums against double-precision sums.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cudalab/activations.hpp"
#include "cudalab/memory.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/bias_act/reference.hpp"

namespace cudalab {
namespace {

constexpr Activation kActivations[] = {Activation::relu, Activation::gelu_tanh, Activation::gelu_erf, Activation::silu};

struct Shape {
  std::int64_t rows, features;
};
// Aligned rows (4096), rows off every 16-byte boundary (33, 4097), one column, a single element.
constexpr Shape kShapes[] = {{1, 1}, {7, 33}, {300, 4096}, {5, 4097}, {1000, 1}};

template <typename T>
std::vector<unsigned char> to_host(const T* device, std::int64_t count, cudaStream_t stream) {
  std::vector<unsigned char> host(static_cast<std::size_t>(count) * sizeof(T));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, host.size(), cudaMemcpyDeviceToHost, stream));
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// Device arrays of `count` elements starting `offset` elements into a buffer with 16 elements of
// poison either side, so a write outside shows.
template <typename T>
struct Padded {
  static constexpr std::int64_t kPad = 16;
  DeviceBuffer<T> buffer;
  std::int64_t offset, count;

  Padded(std::int64_t n, std::int64_t at) : buffer(n + 2 * kPad), offset(kPad + at), count(n) {}
  T* data() const { return buffer.data() + offset; }
  void fill(std::uint64_t seed, cudaStream_t stream) {
    harness::poison(buffer.data(), buffer.bytes(), stream);
    harness::fill_random(dtype_of_v<T>, data(), count, seed, harness::Distribution::normal, stream);
  }
  void poison(cudaStream_t stream) { harness::poison(buffer.data(), buffer.bytes(), stream); }
  std::vector<unsigned char> inside(cudaStream_t stream) const { return to_host(data(), count, stream); }
  // Every byte outside [offset, offset + count) still holds the poison.
  bool untouched_outside(cudaStream_t stream) const {
    const std::vector<unsigned char> all = to_host(buffer.data(), buffer.size(), stream);
    for (std::size_t b = 0; b < all.size(); ++b) {
      const bool inside = b >= offset * sizeof(T) && b < (offset + count) * sizeof(T);
      if (!inside && all[b] != harness::kFloatPoisonByte) return false;
    }
    return true;
  }
};

template <typename T>
void check_forward(Activation activation, Shape shape, std::int64_t at) {
  SCOPED_TRACE(testing::Message() << to_string(dtype_of_v<T>) << " activation " << static_cast<int>(activation) << " "
                                  << shape.rows << "x" << shape.features << " offset " << at);
  Stream stream;
  const std::int64_t n = shape.rows * shape.features;
  Padded<T> x(n, at), bias(shape.features, at), y(n, at);
  x.fill(1, stream.get());
  bias.fill(2, stream.get());
  y.poison(stream.get());
  bias_act(x.data(), bias.data(), y.data(), shape.rows, shape.features, activation, stream.get());
  const harness::Comparison c = harness::check_bias_act(dtype_of_v<T>, activation, x.inside(stream.get()).data(),
                                                        bias.inside(stream.get()).data(), y.inside(stream.get()).data(),
                                                        shape.rows, shape.features);
  EXPECT_TRUE(c.passed()) << c.summary();
  EXPECT_TRUE(y.untouched_outside(stream.get()));
}

template <typename T>
void check_forward_everywhere() {
  for (Activation activation : kActivations)
    for (const Shape& shape : kShapes)
      for (std::int64_t at : {0, 1}) check_forward<T>(activation, shape, at);
}

TEST(LibraryBiasAct, EveryElementType) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for_each_element(BiasActElements{}, [](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    SCOPED_TRACE(to_string(dtype_of_v<T>));
    check_forward_everywhere<T>();
  });
}

// Every finite value of a 16-bit type as x (bias 0), through each activation forward and backward:
// GELU (erf) takes Phi from an erfc form with SFU instructions for 16-bit outputs (activation.cuh),
// whose error must hold everywhere, not only where random inputs fall.
template <typename T>
void check_every_finite_input() {
  static_assert(sizeof(T) == 2, "16-bit types");
  std::vector<std::uint16_t> bits;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint16_t pattern = static_cast<std::uint16_t>(b);
    T value;
    std::memcpy(static_cast<void*>(&value), &pattern, sizeof(value));
    if (std::isfinite(static_cast<float>(value))) bits.push_back(pattern);
  }
  const auto n = static_cast<std::int64_t>(bits.size());
  Stream stream;
  DeviceBuffer<T> x(n), bias(n), y(n), dy(n), dx(n), dbias(n);
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(x.data(), bits.data(), n * sizeof(T), cudaMemcpyHostToDevice, stream.get()));
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(bias.data(), 0, n * sizeof(T), stream.get()));
  harness::fill_random(dtype_of_v<T>, dy.data(), n, 6, harness::Distribution::normal, stream.get());
  const auto host_x = to_host(x.data(), n, stream.get()), host_bias = to_host(bias.data(), n, stream.get()),
             host_dy = to_host(dy.data(), n, stream.get());
  for (Activation activation : kActivations) {
    SCOPED_TRACE(testing::Message() << to_string(dtype_of_v<T>) << " activation " << static_cast<int>(activation));
    bias_act(x.data(), bias.data(), y.data(), 1, n, activation, stream.get());
    const harness::Comparison forward = harness::check_bias_act(
        dtype_of_v<T>, activation, host_x.data(), host_bias.data(), to_host(y.data(), n, stream.get()).data(), 1, n);
    EXPECT_TRUE(forward.passed()) << forward.summary();
    bias_act_backward(x.data(), bias.data(), dy.data(), dx.data(), dbias.data(), 1, n, activation, stream.get());
    const harness::Comparison backward = harness::check_bias_act_backward(
        dtype_of_v<T>, activation, host_x.data(), host_bias.data(), host_dy.data(),
        to_host(dx.data(), n, stream.get()).data(), to_host(dbias.data(), n, stream.get()).data(), 1, n);
    EXPECT_TRUE(backward.passed()) << backward.summary();
  }
}

TEST(LibraryBiasAct, EveryFiniteBf16Input) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_finite_input<__nv_bfloat16>();
}

TEST(LibraryBiasAct, EveryFiniteFp16Input) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_finite_input<__half>();
}

template <typename T>
void check_backward(Activation activation, Shape shape, std::int64_t at) {
  SCOPED_TRACE(testing::Message() << to_string(dtype_of_v<T>) << " activation " << static_cast<int>(activation) << " "
                                  << shape.rows << "x" << shape.features << " offset " << at);
  Stream stream;
  const std::int64_t n = shape.rows * shape.features;
  Padded<T> x(n, at), bias(shape.features, at), dy(n, at), dx(n, at), dbias(shape.features, at);
  x.fill(3, stream.get());
  bias.fill(4, stream.get());
  dy.fill(5, stream.get());
  dx.poison(stream.get());
  dbias.poison(stream.get());
  // The stream-ordered workspace, then the caller's: the same bits.
  bias_act_backward(x.data(), bias.data(), dy.data(), dx.data(), dbias.data(), shape.rows, shape.features, activation,
                    stream.get());
  const std::vector<unsigned char> dx_first = dx.inside(stream.get()), dbias_first = dbias.inside(stream.get());
  const harness::Comparison c = harness::check_bias_act_backward(
      dtype_of_v<T>, activation, x.inside(stream.get()).data(), bias.inside(stream.get()).data(),
      dy.inside(stream.get()).data(), dx_first.data(), dbias_first.data(), shape.rows, shape.features);
  EXPECT_TRUE(c.passed()) << c.summary();
  EXPECT_TRUE(dx.untouched_outside(stream.get()));
  EXPECT_TRUE(dbias.untouched_outside(stream.get()));
  const std::size_t bytes = bias_act_backward_workspace_bytes(shape.rows, shape.features);
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(bytes > 0 ? bytes : 1));
  dx.poison(stream.get());
  dbias.poison(stream.get());
  bias_act_backward(x.data(), bias.data(), dy.data(), dx.data(), dbias.data(), shape.rows, shape.features, activation,
                    workspace.data(), bytes, stream.get());
  EXPECT_EQ(dx.inside(stream.get()), dx_first);
  EXPECT_EQ(dbias.inside(stream.get()), dbias_first);
}

template <typename T>
void check_backward_everywhere() {
  for (Activation activation : kActivations)
    for (const Shape& shape : kShapes)
      for (std::int64_t at : {0, 1}) check_backward<T>(activation, shape, at);
}

TEST(LibraryBiasActBackward, EveryElementType) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for_each_element(BiasActElements{}, [](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    SCOPED_TRACE(to_string(dtype_of_v<T>));
    check_backward_everywhere<T>();
  });
}

// No rows: dbias is written with zeros, dx and y are not touched; no features: nothing happens.
TEST(LibraryBiasActBackward, NoRowsWritesZeroDbias) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  Stream stream;
  Padded<__nv_bfloat16> bias(8, 0), dbias(8, 0);
  bias.fill(6, stream.get());
  dbias.poison(stream.get());
  bias_act_backward<__nv_bfloat16>(nullptr, bias.data(), nullptr, nullptr, dbias.data(), 0, 8, Activation::gelu_tanh,
                                   stream.get());
  EXPECT_EQ(dbias.inside(stream.get()), std::vector<unsigned char>(16, 0));
  EXPECT_TRUE(dbias.untouched_outside(stream.get()));
  EXPECT_NO_THROW(
      bias_act_backward<float>(nullptr, nullptr, nullptr, nullptr, nullptr, 5, 0, Activation::relu, stream.get()));
}

// bias_gradient: each column's sum within fp32's bound for a sum of `rows` terms (the tile order:
// 16 in sequence a lane, the lane tree, the partials in order: (2 ceil(log2 rows) + 2) 2^-23 of the
// terms' magnitude) plus the output's rounding; the same bits on a second call; nothing written
// outside dbias.
template <typename T>
void check_bias_gradient(Shape shape, std::int64_t at) {
  SCOPED_TRACE(testing::Message() << to_string(dtype_of_v<T>) << " bias_gradient " << shape.rows << "x"
                                  << shape.features << " offset " << at);
  Stream stream;
  const std::int64_t n = shape.rows * shape.features;
  Padded<T> dy(n, at), dbias(shape.features, at);
  dy.fill(7, stream.get());
  dbias.poison(stream.get());
  const std::size_t bytes = bias_act_backward_workspace_bytes(shape.rows, shape.features);
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(bytes > 0 ? bytes : 1));
  bias_gradient(dy.data(), dbias.data(), shape.rows, shape.features, workspace.data(), bytes, stream.get());
  const std::vector<unsigned char> first = dbias.inside(stream.get()), values = dy.inside(stream.get());
  EXPECT_TRUE(dbias.untouched_outside(stream.get()));
  const DType dtype = dtype_of_v<T>;
  const double unit =
      dtype == DType::f32 ? std::ldexp(1.0, -24) : (dtype == DType::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8));
  const double levels = shape.rows > 1 ? std::ceil(std::log2(static_cast<double>(shape.rows))) : 1.0;
  for (std::int64_t j = 0; j < shape.features; ++j) {
    double sum = 0.0, magnitude = 0.0;
    for (std::int64_t r = 0; r < shape.rows; ++r) {
      const double v = element_to_double(dtype, values.data(), r * shape.features + j);
      sum += v;
      magnitude += std::fabs(v);
    }
    const double error = (2.0 * levels + 2.0) * std::ldexp(1.0, -23) * magnitude;
    const double bound = error + unit * (std::fabs(sum) + error) + 1e-30;
    const double got = element_to_double(dtype, first.data(), j);
    ASSERT_LE(std::fabs(got - sum), bound) << "column " << j << ": got " << got << ", expected " << sum;
  }
  bias_gradient(dy.data(), dbias.data(), shape.rows, shape.features, workspace.data(), bytes, stream.get());
  EXPECT_EQ(dbias.inside(stream.get()), first);
}

TEST(LibraryBiasGradient, EveryElementType) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for_each_element(BiasActElements{}, [](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    for (const Shape& shape : kShapes)
      for (std::int64_t at : {0, 1}) check_bias_gradient<T>(shape, at);
    check_bias_gradient<T>({8192, 3072}, 0);  // a GPT-2 medium qkv projection's bias
    check_bias_gradient<T>({0, 8}, 0);        // no rows: zeros
  });
}

}  // namespace
}  // namespace cudalab
