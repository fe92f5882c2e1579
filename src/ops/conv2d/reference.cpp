#include "ops/conv2d/reference.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "harness/random.hpp"

namespace cudalab::harness {

Conv2dReference reference_conv2d_at(const float* image, std::int64_t height, std::int64_t width, std::int64_t pitch,
                                    const float* filter, int filter_width, std::int64_t y, std::int64_t x) {
  const int half = filter_width / 2;
  Conv2dReference r;
  for (int i = 0; i < filter_width; ++i) {
    const std::int64_t row = y + i - half;
    if (row < 0 || row >= height) continue;
    for (int j = 0; j < filter_width; ++j) {
      const std::int64_t column = x + j - half;
      if (column < 0 || column >= width) continue;
      const double product =
          static_cast<double>(image[row * pitch + column]) * static_cast<double>(filter[i * filter_width + j]);
      r.value += product;
      r.magnitude += std::fabs(product);
    }
  }
  return r;
}

Tolerance conv2d_tolerance(int filter_width, double magnitude) {
  return {0.0, filter_width * filter_width * static_cast<double>(std::numeric_limits<float>::epsilon()) * magnitude};
}

Comparison check_conv2d(const float* image, std::int64_t height, std::int64_t width, std::int64_t image_pitch,
                        const float* filter, int filter_width, const float* output, std::int64_t output_pitch) {
  float poison;
  std::memset(&poison, kFloatPoisonByte, sizeof poison);
  // The reported tolerance: the loosest any element could get (every product at its largest).
  double largest_pixel = 0, filter_magnitude = 0;
  for (std::int64_t y = 0; y < height; ++y)
    for (std::int64_t x = 0; x < width; ++x)
      largest_pixel = std::fmax(largest_pixel, std::fabs(image[y * image_pitch + x]));
  for (int i = 0; i < filter_width * filter_width; ++i) filter_magnitude += std::fabs(filter[i]);
  const Tolerance loosest = conv2d_tolerance(filter_width, largest_pixel * filter_magnitude);
  return compare_elements(height * width, loosest, [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
    for (std::int64_t index = begin; index < end; ++index) {
      const std::int64_t y = index / width, x = index % width;
      const Conv2dReference ref = reference_conv2d_at(image, height, width, image_pitch, filter, filter_width, y, x);
      const Tolerance own = conv2d_tolerance(filter_width, ref.magnitude);
      const float out = output[y * output_pitch + x];
      const bool unwritten = std::memcmp(&out, &poison, sizeof poison) == 0;
      if (!unwritten && own.accepts(out, ref.value)) {
        b.add(index, static_cast<double>(out), ref.value, false);
      } else {
        // Judged by the element's own tolerance, merged into the chunk's counts.
        ComparisonBuilder failure(own);
        failure.add(index, static_cast<double>(out), ref.value, unwritten);
        b.merge(failure);
      }
    }
  });
}

}  // namespace cudalab::harness
