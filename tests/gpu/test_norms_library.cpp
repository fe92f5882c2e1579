// cudalab::layer_norm, rms_norm, their add_ forms and their backward calls as a program would call them: every
// dtype, every width class the library dispatches on (a warp per row, a block, a cluster, the
// element-load fallbacks of rows that do not start on 16-byte boundaries), rows far from zero,
// null statistics, no rows, the caller's workspace, deterministic column sums, and nothing
// written outside the outputs. Checked with the ops' CPU reference (src/ops/norms/reference.hpp).
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cudalab/memory.hpp"
#include "cudalab/norms.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/norms/inputs.hpp"
#include "ops/norms/reference.hpp"

namespace cudalab {
namespace {

using harness::Distribution;
using norms_variants::Norm;

constexpr std::uint64_t kSeed = 0x5EED;
// Slack around every array, poisoned: a write outside an output shows.
constexpr std::int64_t kSlack = 16;

template <typename T>
std::vector<unsigned char> to_host(const DeviceBuffer<T>& buffer, cudaStream_t stream) {
  std::vector<unsigned char> host(buffer.bytes());
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost, stream));
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// The bytes of `host` outside [begin, begin + count) elements still hold the poison.
void expect_untouched_outside(const std::vector<unsigned char>& host, std::size_t element, std::int64_t begin,
                              std::int64_t count, const char* what) {
  for (std::size_t b = 0; b < host.size(); ++b) {
    const bool inside = b >= begin * element && b < (begin + count) * element;
    if (!inside) {
      ASSERT_EQ(host[b], harness::kFloatPoisonByte) << what << ": written outside at byte " << b;
    }
  }
}

// An array of `count` elements starting `offset` elements into a poisoned buffer with slack.
template <typename T>
struct Placed {
  DeviceBuffer<T> buffer;
  std::int64_t offset;
  Placed(std::int64_t count, std::int64_t place, cudaStream_t stream) : buffer(count + place + kSlack), offset(place) {
    harness::poison(buffer.data(), buffer.bytes(), stream);
  }
  T* get() const { return buffer.data() + offset; }
};

struct Shape {
  std::int64_t rows;
  std::int64_t features;
  std::int64_t offset;  // elements the matrices and vectors start into their buffers
};

// Every class forward_rung picks from, aligned and not: a warp per row (1, 31, 1000), blocks
// (4096-32768), clusters of 2-8 CTAs (65536-262144; a block elsewhere), and rows that never start
// on 16-byte boundaries (odd widths, offset pointers).
const Shape kForwardShapes[] = {{3, 1, 0},     {64, 31, 0},   {33, 1000, 0}, {17, 4096, 0},  {9, 8192, 0},
                                {5, 16384, 0}, {3, 32768, 0}, {2, 65536, 0}, {2, 262144, 0}, {7, 4097, 0},
                                {5, 1000, 1},  {3, 8192, 3},  {2, 20001, 0}, {2, 65539, 0}};

// `add`: the add_ form, a residual beside x and their sum written to h.
template <typename T>
void check_forward(Norm norm, const Shape& s, Distribution distribution, bool statistics, bool add = false) {
  const DType dtype = dtype_of_v<T>;
  SCOPED_TRACE(testing::Message() << to_string(dtype) << (add ? " add_" : " ")
                                  << (norm == Norm::layer ? "layer_norm " : "rms_norm ") << s.rows << " x "
                                  << s.features << ", offset " << s.offset << ", " << harness::to_string(distribution)
                                  << (statistics ? "" : ", no statistics"));
  const std::int64_t n = s.rows * s.features;
  const double eps = norm == Norm::layer ? 1e-5 : 1e-6;
  Stream stream;
  const cudaStream_t st = stream.get();
  Placed<T> x(n, s.offset, st), gamma(s.features, s.offset, st), beta(s.features, s.offset, st), y(n, s.offset, st);
  Placed<float> mean(s.rows, 0, st), rstd(s.rows, 0, st);
  harness::fill_norm_x(dtype, x.get(), n, s.features, kSeed, distribution, st);
  harness::fill_norm_gamma(dtype, gamma.get(), s.features, kSeed + 1, st);
  harness::fill_norm_beta(dtype, beta.get(), s.features, kSeed + 2, st);
  float* mean_out = statistics ? mean.get() : nullptr;
  float* rstd_out = statistics ? rstd.get() : nullptr;
  Placed<T> residual(add ? n : 0, s.offset, st), h(add ? n : 0, s.offset, st);
  if (add) harness::fill_norm_x(dtype, residual.get(), n, s.features, kSeed + 3, distribution, st);
  if (add && norm == Norm::layer) {
    add_layer_norm(x.get(), residual.get(), gamma.get(), beta.get(), y.get(), h.get(), mean_out, rstd_out, s.rows,
                   s.features, static_cast<float>(eps), st);
  } else if (add) {
    add_rms_norm(x.get(), residual.get(), gamma.get(), y.get(), h.get(), rstd_out, s.rows, s.features,
                 static_cast<float>(eps), st);
  } else if (norm == Norm::layer) {
    layer_norm(x.get(), gamma.get(), beta.get(), y.get(), mean_out, rstd_out, s.rows, s.features,
               static_cast<float>(eps), st);
  } else {
    rms_norm(x.get(), gamma.get(), y.get(), rstd_out, s.rows, s.features, static_cast<float>(eps), st);
  }
  const auto hx = to_host(x.buffer, st), hgamma = to_host(gamma.buffer, st), hbeta = to_host(beta.buffer, st);
  const auto hy = to_host(y.buffer, st), hmean = to_host(mean.buffer, st), hrstd = to_host(rstd.buffer, st);
  const std::size_t size = sizeof(T);
  expect_untouched_outside(hy, size, s.offset, n, "y");
  const auto hresidual = to_host(residual.buffer, st), hh = to_host(h.buffer, st);
  if (add) expect_untouched_outside(hh, size, s.offset, n, "h");
  if (!statistics) {
    expect_untouched_outside(hmean, sizeof(float), 0, 0, "mean (null)");
    expect_untouched_outside(hrstd, sizeof(float), 0, 0, "rstd (null)");
    return;
  }
  expect_untouched_outside(hmean, sizeof(float), 0, norm == Norm::layer ? s.rows : 0, "mean");
  expect_untouched_outside(hrstd, sizeof(float), 0, s.rows, "rstd");
  harness::NormForwardHost host;
  host.norm = norm;
  host.dtype = dtype;
  host.rows = s.rows;
  host.features = s.features;
  host.eps = eps;
  host.x = hx.data() + s.offset * size;
  host.gamma = hgamma.data() + s.offset * size;
  host.beta = hbeta.data() + s.offset * size;
  host.y = hy.data() + s.offset * size;
  host.mean = reinterpret_cast<const float*>(hmean.data());
  host.rstd = reinterpret_cast<const float*>(hrstd.data());
  if (add) {
    host.residual = hresidual.data() + s.offset * size;
    host.residual_out = hh.data() + s.offset * size;
  }
  const harness::Comparison c = harness::check_norm_forward(host);
  EXPECT_TRUE(c.passed()) << c.summary();
}

template <typename T>
void check_forward_everywhere() {
  for (Norm norm : {Norm::layer, Norm::rms})
    for (const Shape& s : kForwardShapes)
      for (Distribution d : {Distribution::uniform, Distribution::large_magnitude}) check_forward<T>(norm, s, d, true);
  for (Norm norm : {Norm::layer, Norm::rms}) check_forward<T>(norm, {9, 8192, 0}, Distribution::normal, false);
}

TEST(LibraryNorms, ForwardEveryElementType) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for_each_element(NormElements{}, [](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    SCOPED_TRACE(to_string(dtype_of_v<T>));
    check_forward_everywhere<T>();
  });
}

// The backward's widths: fused (a warp per row up to 512, blocks up to 16384, element loads when
// misaligned), unfused past 16384; no rows (zero column sums).
const Shape kBackwardShapes[] = {{3, 1, 0},     {64, 31, 0},   {300, 1000, 0}, {70, 4096, 0},
                                 {33, 8192, 0}, {9, 16384, 0}, {4, 65536, 0},  {7, 4097, 0},
                                 {5, 1000, 1},  {3, 20001, 0}, {0, 1000, 0},   {2500, 256, 0}};

// Runs the backward twice (the plain call, then the caller-workspace call into fresh outputs)
// and checks the first against the reference and the second against the first, bit for bit.
// `add`: the add_ form, x the sum h and dresidual added to dx (the workspace call only, which is
// the add_ forms' one).
template <typename T>
void check_backward(Norm norm, const Shape& s, Distribution distribution, bool add = false) {
  const DType dtype = dtype_of_v<T>;
  SCOPED_TRACE(testing::Message() << to_string(dtype) << (add ? " add_" : " ")
                                  << (norm == Norm::layer ? "layer_norm" : "rms_norm") << "_backward " << s.rows
                                  << " x " << s.features << ", offset " << s.offset << ", "
                                  << harness::to_string(distribution));
  const bool layer = norm == Norm::layer;
  const std::int64_t n = s.rows * s.features;
  Stream stream;
  const cudaStream_t st = stream.get();
  Placed<T> x(n, s.offset, st), dy(n, s.offset, st), gamma(s.features, s.offset, st);
  Placed<float> mean(s.rows, 0, st), rstd(s.rows, 0, st);
  harness::fill_norm_x(dtype, x.get(), n, s.features, kSeed, distribution, st);
  harness::fill_norm_dy(dtype, dy.get(), n, kSeed + 1, distribution, st);
  harness::fill_norm_gamma(dtype, gamma.get(), s.features, kSeed + 2, st);
  harness::fill_norm_mean(mean.get(), s.rows, kSeed + 3, distribution, dtype, st);
  harness::fill_norm_rstd(rstd.get(), s.rows, kSeed + 4, distribution, dtype, norm, st);
  Placed<T> dresidual(add ? n : 0, s.offset, st);
  if (add) harness::fill_norm_dy(dtype, dresidual.get(), n, kSeed + 5, distribution, st);
  std::vector<std::vector<unsigned char>> outputs[2];
  for (int run = 0; run < 2; ++run) {
    Placed<T> dx(n, s.offset, st), dgamma(s.features, s.offset, st), dbeta(s.features, s.offset, st);
    const std::size_t bytes = layer ? layer_norm_backward_workspace_bytes(s.rows, s.features)
                                    : rms_norm_backward_workspace_bytes(s.rows, s.features);
    DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(bytes) + 1);
    if (add && layer) {
      add_layer_norm_backward(x.get(), dy.get(), dresidual.get(), gamma.get(), mean.get(), rstd.get(), dx.get(),
                              dgamma.get(), dbeta.get(), s.rows, s.features, workspace.data(), bytes, st);
    } else if (add) {
      add_rms_norm_backward(x.get(), dy.get(), dresidual.get(), gamma.get(), rstd.get(), dx.get(), dgamma.get(), s.rows,
                            s.features, workspace.data(), bytes, st);
    } else if (layer && run == 0) {
      layer_norm_backward(x.get(), dy.get(), gamma.get(), mean.get(), rstd.get(), dx.get(), dgamma.get(), dbeta.get(),
                          s.rows, s.features, st);
    } else if (layer) {
      layer_norm_backward(x.get(), dy.get(), gamma.get(), mean.get(), rstd.get(), dx.get(), dgamma.get(), dbeta.get(),
                          s.rows, s.features, workspace.data(), bytes, st);
    } else if (run == 0) {
      rms_norm_backward(x.get(), dy.get(), gamma.get(), rstd.get(), dx.get(), dgamma.get(), s.rows, s.features, st);
    } else {
      rms_norm_backward(x.get(), dy.get(), gamma.get(), rstd.get(), dx.get(), dgamma.get(), s.rows, s.features,
                        workspace.data(), bytes, st);
    }
    outputs[run] = {to_host(dx.buffer, st), to_host(dgamma.buffer, st), to_host(dbeta.buffer, st)};
  }
  const std::size_t size = sizeof(T);
  const std::vector<unsigned char>& hdx = outputs[0][0];
  const std::vector<unsigned char>& hdgamma = outputs[0][1];
  const std::vector<unsigned char>& hdbeta = outputs[0][2];
  expect_untouched_outside(hdx, size, s.offset, n, "dx");
  expect_untouched_outside(hdgamma, size, s.offset, s.features, "dgamma");
  expect_untouched_outside(hdbeta, size, s.offset, layer ? s.features : 0, "dbeta");
  EXPECT_TRUE(outputs[0] == outputs[1]) << "the caller-workspace call gave other bits than the first call";
  const auto hx = to_host(x.buffer, st), hdy = to_host(dy.buffer, st), hgamma = to_host(gamma.buffer, st);
  const auto hmean = to_host(mean.buffer, st), hrstd = to_host(rstd.buffer, st);
  harness::NormBackwardHost h;
  h.norm = norm;
  h.dtype = dtype;
  h.rows = s.rows;
  h.features = s.features;
  h.x = hx.data() + s.offset * size;
  h.dy = hdy.data() + s.offset * size;
  h.gamma = hgamma.data() + s.offset * size;
  h.mean = layer ? reinterpret_cast<const float*>(hmean.data()) : nullptr;
  h.rstd = reinterpret_cast<const float*>(hrstd.data());
  h.dx = hdx.data() + s.offset * size;
  h.dgamma = hdgamma.data() + s.offset * size;
  h.dbeta = layer ? hdbeta.data() + s.offset * size : nullptr;
  const auto hdresidual = to_host(dresidual.buffer, st);
  if (add) h.dresidual = hdresidual.data() + s.offset * size;
  const harness::Comparison c = harness::check_norm_backward(h);
  EXPECT_TRUE(c.passed()) << c.summary();
}

template <typename T>
void check_backward_everywhere() {
  for (Norm norm : {Norm::layer, Norm::rms})
    for (const Shape& s : kBackwardShapes)
      for (Distribution d : {Distribution::uniform, Distribution::large_magnitude}) check_backward<T>(norm, s, d);
}

TEST(LibraryNorms, BackwardEveryElementType) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for_each_element(NormElements{}, [](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    SCOPED_TRACE(to_string(dtype_of_v<T>));
    check_backward_everywhere<T>();
  });
}

// The add_ forms at every width class: fused to 32768 features (the 1024-thread class adding first,
// in a pass of its own), the add and then the plain norm past it.
TEST(LibraryNorms, AddFormsEveryElementType) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for_each_element(NormElements{}, [](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    for (Norm norm : {Norm::layer, Norm::rms}) {
      for (const Shape& s : kForwardShapes) check_forward<T>(norm, s, Distribution::uniform, true, true);
      check_forward<T>(norm, {9, 8192, 0}, Distribution::large_magnitude, true, true);
      check_backward<T>(norm, {300, 1000, 0}, Distribution::uniform, true);
      check_backward<T>(norm, {9, 16384, 0}, Distribution::uniform, true);
      check_backward<T>(norm, {3, 20001, 0}, Distribution::uniform, true);
      check_backward<T>(norm, {5, 1000, 1}, Distribution::large_magnitude, true);
    }
  });
}

TEST(LibraryNorms, RefusesASmallerWorkspaceAndRowsOfNoFeatures) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t rows = 64, features = 1000;
  DeviceBuffer<float> x(rows * features), y(rows * features), gamma(features), beta(features), stats(rows);
  const std::size_t bytes = layer_norm_backward_workspace_bytes(rows, features);
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(bytes));
  EXPECT_EQ(test_support::thrown_kind([&] {
              layer_norm_backward(x.data(), x.data(), gamma.data(), stats.data(), stats.data(), y.data(), gamma.data(),
                                  beta.data(), rows, features, workspace.data(), bytes - 4);
            }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([&] {
              layer_norm(x.data(), gamma.data(), beta.data(), y.data(), stats.data(), stats.data(), rows, 0);
            }),
            ErrorKind::invalid_argument);
  EXPECT_NO_THROW(rms_norm_backward(x.data(), x.data(), gamma.data(), stats.data(), y.data(), gamma.data(), rows, 0));
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace cudalab
