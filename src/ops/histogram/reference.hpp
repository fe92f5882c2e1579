// The CPU reference for the histogram ops: exact 64-bit counts of each value in [0, bins).
#pragma once

#include <cstdint>
#include <vector>

namespace cudalab::harness {

// counts[b] = number of i < n with keys[i] == b, for b < bins; keys >= bins are not counted.
// Split over the host's cores (a 2^28-sample check would otherwise take a second per variant).
template <typename Key>
std::vector<std::uint64_t> reference_histogram(const Key* keys, std::int64_t n, int bins);

extern template std::vector<std::uint64_t> reference_histogram(const std::uint8_t*, std::int64_t, int);
extern template std::vector<std::uint64_t> reference_histogram(const std::uint16_t*, std::int64_t, int);

}  // namespace cudalab::harness
