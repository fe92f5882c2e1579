// What the conv2d kernels share: the launch shape and the inner loop of the one-output-per-thread
// kernels.
#pragma once

#include <string>

#include "core/launch.cuh"
#include "core/warp.cuh"
#include "cudalab/error.hpp"
#include "ops/conv2d/variants.hpp"

namespace cudalab::conv2d_variants {

// A grid of `block` threads covering every pixel once; the y dimension of a grid stops at 65535.
inline dim3 pixel_grid(const Conv2dArgs<float>& args, dim3 block) {
  const std::int64_t rows = ceil_div<std::int64_t>(args.height, block.y);
  CUDALAB_REQUIRE(rows <= 65535, "conv2d: " + std::to_string(args.height) + " rows need more than 65535 blocks of " +
                                     std::to_string(block.y) + " rows");
  return dim3(static_cast<unsigned>(ceil_div<std::int64_t>(args.width, block.x)), static_cast<unsigned>(rows));
}

// Output (y, x) from the image in global memory, tap by tap with a bounds check each; `tap(k)`
// gives filter value k = i*R + j, from wherever the variant keeps the filter.
template <typename Tap>
__device__ __forceinline__ float direct_window_sum(const Conv2dArgs<float>& args, std::int64_t x, std::int64_t y,
                                                   Tap tap) {
  const int half = args.filter_width / 2;
  float sum = 0.0f;
  for (int i = 0; i < args.filter_width; ++i) {
    const std::int64_t row = y + i - half;
    if (row < 0 || row >= args.height) continue;
    for (int j = 0; j < args.filter_width; ++j) {
      const std::int64_t column = x + j - half;
      if (column < 0 || column >= args.width) continue;
      sum += args.input[row * args.input_pitch + column] * tap(i * args.filter_width + j);
    }
  }
  return sum;
}

}  // namespace cudalab::conv2d_variants
