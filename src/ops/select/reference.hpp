// The CPU reference for the selection ops: the kept elements in order and their count, checked
// exactly.
#pragma once

#include <cstdint>

#include "harness/compare.hpp"

namespace cudalab::harness {

// Checks a selection of in[0, n) with x >= threshold: out[k] must be the k-th kept input for every
// k below the reference's count K (out past K is not looked at), and `count` must equal K. The
// Comparison has K + 1 elements: 0..K-1 are the outputs, element K is the count. An element whose
// bytes are all kIntegerPoisonByte counts as never written, unless the reference value has that
// bit pattern too.
Comparison check_select(const std::int32_t* in, std::int64_t n, std::int32_t threshold, const std::int32_t* out,
                        std::int64_t count);

}  // namespace cudalab::harness
