// The conv2d CPU reference (orientation, padding, per-element tolerance, poison) and the library
// call's argument checks, which throw before touching a GPU.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cudalab/conv2d.hpp"
#include "error_kind.hpp"
#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/conv2d/ids.hpp"
#include "ops/conv2d/reference.hpp"

namespace cudalab::harness {
namespace {

TEST(Conv2dReference, IsACrossCorrelationWithZeroPadding) {
  // 3x3 image 1..9; a filter whose only tap is the top-left one picks the pixel up and to the
  // left (a flipped convolution would pick the one down and to the right).
  const std::vector<float> image = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> corner = {1, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(reference_conv2d_at(image.data(), 3, 3, 3, corner.data(), 3, 1, 1).value, 1.0);
  EXPECT_EQ(reference_conv2d_at(image.data(), 3, 3, 3, corner.data(), 3, 2, 2).value, 5.0);
  EXPECT_EQ(reference_conv2d_at(image.data(), 3, 3, 3, corner.data(), 3, 0, 1).value, 0.0);  // padding
  const std::vector<float> ones(9, 1.0f);
  EXPECT_EQ(reference_conv2d_at(image.data(), 3, 3, 3, ones.data(), 3, 0, 0).value, 1 + 2 + 4 + 5);
  EXPECT_EQ(reference_conv2d_at(image.data(), 3, 3, 3, ones.data(), 3, 1, 1).value, 45.0);
  const std::vector<float> negative = {-1, -1, -1, -1, -1, -1, -1, -1, -1};
  const Conv2dReference r = reference_conv2d_at(image.data(), 3, 3, 3, negative.data(), 3, 1, 1);
  EXPECT_EQ(r.value, -45.0);
  EXPECT_EQ(r.magnitude, 45.0);
}

TEST(Conv2dReference, ToleranceGrowsWithTapsAndMagnitude) {
  const double eps = std::numeric_limits<float>::epsilon();
  EXPECT_DOUBLE_EQ(conv2d_tolerance(3, 2.0).atol, 9 * eps * 2.0);
  EXPECT_DOUBLE_EQ(conv2d_tolerance(7, 1.0).atol, 49 * eps);
  EXPECT_EQ(conv2d_tolerance(5, 1.0).rtol, 0.0);
}

TEST(Conv2dReference, CheckAcceptsRoundingAndCatchesErrorsAndPoison) {
  const std::int64_t height = 5, width = 6;
  std::vector<float> image(height * width), filter(25);
  for (std::int64_t i = 0; i < height * width; ++i)
    image[i] = random_value(3, i, height * width, Distribution::uniform);
  for (int i = 0; i < 25; ++i) filter[i] = random_value(4, i, 25, Distribution::uniform);
  std::vector<float> output(height * width);
  for (std::int64_t i = 0; i < height * width; ++i)
    output[i] = static_cast<float>(
        reference_conv2d_at(image.data(), height, width, width, filter.data(), 5, i / width, i % width).value);
  EXPECT_TRUE(check_conv2d(image.data(), height, width, width, filter.data(), 5, output.data(), width).passed());

  // An error four times the element's tolerance fails, and is reported at that element.
  const Conv2dReference at7 = reference_conv2d_at(image.data(), height, width, width, filter.data(), 5, 1, 1);
  std::vector<float> wrong = output;
  wrong[7] = static_cast<float>(at7.value + 4 * conv2d_tolerance(5, at7.magnitude).atol);
  const Comparison c = check_conv2d(image.data(), height, width, width, filter.data(), 5, wrong.data(), width);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch, 7);

  std::vector<float> unwritten = output;
  std::memset(&unwritten[29], kFloatPoisonByte, sizeof(float));
  EXPECT_EQ(check_conv2d(image.data(), height, width, width, filter.data(), 5, unwritten.data(), width).unwritten, 1);
}

// Rows `pitch` apart on both sides: the reference reads the image through its pitch, and the
// check looks only at the first `width` outputs of each row (the rest stay poisoned).
TEST(Conv2dReference, PitchedImageAndOutput) {
  const std::int64_t height = 4, width = 5, image_pitch = 8, output_pitch = 7;
  std::vector<float> dense(height * width), image(height * image_pitch, 1e30f), filter(9);
  for (std::int64_t i = 0; i < height * width; ++i)
    dense[i] = random_value(5, i, height * width, Distribution::uniform);
  for (std::int64_t y = 0; y < height; ++y)
    for (std::int64_t x = 0; x < width; ++x) image[y * image_pitch + x] = dense[y * width + x];
  for (int i = 0; i < 9; ++i) filter[i] = random_value(6, i, 9, Distribution::uniform);
  std::vector<float> output(height * output_pitch);
  std::memset(output.data(), kFloatPoisonByte, output.size() * sizeof(float));
  for (std::int64_t y = 0; y < height; ++y) {
    for (std::int64_t x = 0; x < width; ++x) {
      const Conv2dReference pitched =
          reference_conv2d_at(image.data(), height, width, image_pitch, filter.data(), 3, y, x);
      EXPECT_EQ(pitched.value, reference_conv2d_at(dense.data(), height, width, width, filter.data(), 3, y, x).value);
      output[y * output_pitch + x] = static_cast<float>(pitched.value);
    }
  }
  const Comparison c =
      check_conv2d(image.data(), height, width, image_pitch, filter.data(), 3, output.data(), output_pitch);
  EXPECT_TRUE(c.passed()) << c.summary();
  EXPECT_EQ(c.count, height * width);
}

TEST(Conv2dRegistry, OpKeepsItsShapesAndPadsRows) {
  namespace ids = conv2d_ids;
  const Op* op = builtin_registry().find_op(ids::kOp);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->dim_names, (std::vector<std::string>{"H", "W", "R"}));
  EXPECT_EQ(op->dtypes, std::vector<DType>{DType::f32});
  EXPECT_EQ(op->bench_problems.size(), 4u);
  const Problem c13 = op->problem({1000, 1000, 3}, DType::f32);
  EXPECT_NE(std::find(op->bench_problems.begin(), op->bench_problems.end(), c13), op->bench_problems.end());
  // 33 columns pad to 64 floats (128-byte rows); the filter is R x R.
  const Problem odd = op->problem({31, 33, 3}, DType::f32);
  for (const TensorSpec& t : op->tensors) {
    if (t.name == "filter") {
      EXPECT_EQ(t.elements(odd), 9);
    } else {
      EXPECT_EQ(t.elements(odd), 31 * 64) << t.name;
    }
  }
  const Work w = op->work(odd);
  EXPECT_DOUBLE_EQ(w.bytes_read, 4.0 * (31 * 33 + 9));
  EXPECT_DOUBLE_EQ(w.bytes_written, 4.0 * 31 * 33);
  EXPECT_DOUBLE_EQ(w.flops, 2.0 * 9 * 31 * 33);
  ASSERT_NE(op->find_variant(ids::kCudnn), nullptr);
  EXPECT_EQ(op->find_variant(ids::kCudnn)->role, Role::baseline);
}

TEST(Conv2dLibrary, RejectsBadArguments) {
  // Never dereferenced: every call below fails its argument checks first.
  const auto* in = reinterpret_cast<const float*>(std::uintptr_t{0x10000});
  const auto* filter = reinterpret_cast<const float*>(std::uintptr_t{0x20000});
  auto* out = reinterpret_cast<float*>(std::uintptr_t{0x30000});
  using test_support::thrown_kind;
  const ErrorKind bad = ErrorKind::invalid_argument;
  EXPECT_EQ(thrown_kind([&] { conv2d(in, -1, 8, filter, 3, out); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, -1, filter, 3, out); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, 8, filter, 4, out); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, 8, filter, 9, out); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, 8, filter, 0, out); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, 8, 7, filter, 3, out, 8); }), bad);  // pitch below width
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, 8, 8, filter, 3, out, 7); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(nullptr, 8, 8, filter, 3, out); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, 8, nullptr, 3, out); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, 8, filter, 3, nullptr); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(in, std::int64_t{1} << 40, 8, filter, 3, out); }), bad);
  // In place, and an output that runs into the filter.
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, 8, filter, 3, const_cast<float*>(in) + 4); }), bad);
  EXPECT_EQ(thrown_kind([&] { conv2d(in, 8, 8, filter, 3, const_cast<float*>(filter) - 10); }), bad);
}

TEST(Conv2dLibrary, EmptyImageDoesNothing) {
  // No pointer is touched and nothing is launched, so this runs without a GPU.
  EXPECT_NO_THROW(conv2d(nullptr, 0, 8, nullptr, 3, nullptr));
  EXPECT_NO_THROW(conv2d(nullptr, 8, 0, nullptr, 3, nullptr));
}

}  // namespace
}  // namespace cudalab::harness
