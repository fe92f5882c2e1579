// The CPU reference for the scan ops: a scan's output checked element by element against the
// prefix sums of its input, int32 exactly with wrap-around (two's complement, as the GPU adds),
// fp32 against a double-precision sum with a tolerance that grows with each prefix's magnitude.
#pragma once

#include <cstddef>
#include <cstdint>

#include "harness/compare.hpp"
#include "ops/scan/variants.hpp"

namespace cudalab::harness {

// Elements whose bytes are all kIntegerPoisonByte (int32) or kFloatPoisonByte (fp32) count as
// never written, unless the reference itself has that bit pattern (an int32 prefix sum of
// wrapping inputs can).
Comparison check_scan(const std::int32_t* in, const std::int32_t* out, std::int64_t n, scan_variants::ScanKind kind);

// Element i of the output sums `terms` = i+1 (inclusive) or i (exclusive) inputs; it must be
// within Tolerance::fp32_sum(n, S) of the double-precision sum, where S is the sum of those
// inputs' magnitudes: 2 * ceil(log2 n) * eps * S absolute, plus eps relative. A fixed tolerance
// for the whole array would be either too loose for the first prefixes or too tight for the last.
// The Comparison reports the loosest (the last element's) tolerance.
Comparison check_scan(const float* in, const float* out, std::int64_t n, scan_variants::ScanKind kind);

// Host memory check_scan allocates for n elements beyond its arguments (the running sums it
// keeps every 2^16 elements), for either type.
std::size_t check_scan_host_bytes(std::int64_t n);

}  // namespace cudalab::harness
