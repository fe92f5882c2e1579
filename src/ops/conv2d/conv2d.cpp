#include "cudalab/conv2d.hpp"

#include <cstdint>
#include <string>

#include "cudalab/error.hpp"
#include "ops/conv2d/variants.hpp"

namespace cudalab {
namespace {

bool overlaps(const void* a, std::int64_t a_floats, const void* b, std::int64_t b_floats) {
  const auto a_begin = reinterpret_cast<std::uintptr_t>(a), b_begin = reinterpret_cast<std::uintptr_t>(b);
  const auto a_end = a_begin + sizeof(float) * a_floats, b_end = b_begin + sizeof(float) * b_floats;
  return a_begin < b_end && b_begin < a_end;
}

}  // namespace

// register_tiled: the fastest verified variant at every bench size on an H100 (docs/conv2d.md).
void conv2d(const float* input, std::int64_t height, std::int64_t width, std::int64_t input_pitch, const float* filter,
            int filter_width, float* output, std::int64_t output_pitch, cudaStream_t stream) {
  CUDALAB_REQUIRE(height >= 0 && width >= 0, "conv2d: height and width must be >= 0, got " + std::to_string(height) +
                                                 " x " + std::to_string(width));
  CUDALAB_REQUIRE(input_pitch >= width && output_pitch >= width,
                  "conv2d: pitches must be >= the width " + std::to_string(width) + ", got " +
                      std::to_string(input_pitch) + " and " + std::to_string(output_pitch));
  CUDALAB_REQUIRE(filter_width >= 1 && filter_width <= kMaxConv2dFilterWidth && filter_width % 2 == 1,
                  "conv2d: the filter width must be odd, 1 to 7, got " + std::to_string(filter_width));
  CUDALAB_REQUIRE(height <= conv2d_variants::register_tiled_max_height(),
                  "conv2d: at most " + std::to_string(conv2d_variants::register_tiled_max_height()) + " rows, got " +
                      std::to_string(height));
  if (height == 0 || width == 0) return;
  CUDALAB_REQUIRE(input != nullptr && filter != nullptr && output != nullptr,
                  "conv2d: input, filter and output must be device pointers, got a null one");
  const std::int64_t output_span = (height - 1) * output_pitch + width;
  CUDALAB_REQUIRE(!overlaps(output, output_span, input, (height - 1) * input_pitch + width) &&
                      !overlaps(output, output_span, filter, static_cast<std::int64_t>(filter_width) * filter_width),
                  "conv2d: the output must not overlap the input or the filter");
  conv2d_variants::Conv2dArgs<float> args;
  args.input = input;
  args.input_pitch = input_pitch;
  args.filter = filter;
  args.filter_width = filter_width;
  args.output = output;
  args.output_pitch = output_pitch;
  args.height = height;
  args.width = width;
  conv2d_variants::register_tiled(args, stream);
}

void conv2d(const float* input, std::int64_t height, std::int64_t width, const float* filter, int filter_width,
            float* output, cudaStream_t stream) {
  conv2d(input, height, width, width, filter, filter_width, output, width, stream);
}

}  // namespace cudalab
