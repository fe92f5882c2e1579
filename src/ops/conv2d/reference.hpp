// The CPU reference for conv2d: each output in double, checked against a tolerance of its own.
#pragma once

#include <cstdint>

#include "harness/compare.hpp"

namespace cudalab::harness {

struct Conv2dReference {
  double value = 0;      // sum of the window's products, in double
  double magnitude = 0;  // sum of the products' absolute values
};

// Output (y, x) of the zero-padded "same" cross-correlation of a height x width image (rows
// `pitch` elements apart) with an R x R filter (R odd).
Conv2dReference reference_conv2d_at(const float* image, std::int64_t height, std::int64_t width, std::int64_t pitch,
                                    const float* filter, int filter_width, std::int64_t y, std::int64_t x);

// An fp32 output sums R*R products; rounding each product and each partial sum at most once
// (FMA rounds less) bounds the error by gamma_{R*R} * magnitude, gamma_k = k*u/(1 - k*u) with
// u = 2^-24, whatever the order of the sum. The tolerance allows twice that: R*R * eps *
// magnitude (eps = 2^-23), and nothing relative (|value| <= magnitude already).
Tolerance conv2d_tolerance(int filter_width, double magnitude);

// Checks a height x width output (rows output_pitch elements apart; the rest of each row is not
// looked at) element by element, each against its own tolerance; the Comparison counts the
// height * width outputs in row-major order and reports the loosest tolerance met. Outputs still
// 0xFF bytes count as unwritten.
Comparison check_conv2d(const float* image, std::int64_t height, std::int64_t width, std::int64_t image_pitch,
                        const float* filter, int filter_width, const float* output, std::int64_t output_pitch);

}  // namespace cudalab::harness
