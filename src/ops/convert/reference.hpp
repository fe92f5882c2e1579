// The convert op's CPU reference: every output bit-exact against the host conversions of
// cudalab/dtype.hpp (element_to_double, then element_from_double, which rounds to nearest even
// as __float2half_rn and __float2bfloat16_rn do; fp32 -> double -> 16-bit rounds once, and the
// way back is exact).
#pragma once

#include <cstdint>

#include "cudalab/dtype.hpp"
#include "harness/compare.hpp"

namespace cudalab::harness {

// Checks the n elements of y (of dtype `to`) against x (of dtype `from`) converted on the host.
// An element passes when its bytes equal the reference's, or when x is NaN and it is a NaN (any
// payload). An element still holding `to`'s poison bytes counts as never written: no conversion
// the convert op's inputs lead to yields the all-ones NaN (fp16 and bf16 NaNs of its fp32 inputs
// keep no all-ones payload, a widened NaN has zero low bits). A zero of the wrong sign fails.
Comparison check_conversion(DType from, const void* x, DType to, const void* y, std::int64_t n);

}  // namespace cudalab::harness
