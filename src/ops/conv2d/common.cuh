// What the conv2d kernels share: the launch shape of one-output-per-thread kernels.
#pragma once

#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/conv2d/variants.hpp"

namespace cudalab::conv2d_variants {

// A grid of `block` threads covering every pixel once; the y dimension of a grid stops at 65535.
inline dim3 pixel_grid(const Conv2dArgs& args, dim3 block) {
  const std::int64_t rows = ceil_div<std::int64_t>(args.height, block.y);
  CUDALAB_REQUIRE(rows <= 65535, "conv2d: " + std::to_string(args.height) + " rows need more than 65535 blocks of " +
                                     std::to_string(block.y) + " rows");
  return dim3(static_cast<unsigned>(ceil_div<std::int64_t>(args.width, block.x)), static_cast<unsigned>(rows));
}

}  // namespace cudalab::conv2d_variants
