// Host-side arithmetic of the transfer and pipeline experiments: the pipeline kernel's closed form
// (so a check of 2^26 outputs costs one multiply-add each, whatever the kernel's iteration count),
// the chunk plan, and the byte pattern the transfers carry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cudalab::transfers {

// x -> multiplier * x + increment (mod 2^32). The pipeline kernel applies it `iterations` times
// in a dependent chain (compute-bound, memory-light); composing affine maps gives the host the
// same result in O(log iterations).
struct AffineMap {
  std::uint32_t multiplier = 1;
  std::uint32_t increment = 0;

  std::uint32_t apply(std::uint32_t x) const { return multiplier * x + increment; }
};

// The map applied `iterations` times (the identity for 0); throws invalid_argument for < 0.
AffineMap affine_power(AffineMap map, std::int64_t iterations);

// The multiplier and increment of a full-period 32-bit LCG (Numerical Recipes'), so repeated
// application never collapses to a constant the compiler or a lucky check could exploit.
inline constexpr AffineMap kPipelineStep{1664525u, 1013904223u};

struct ChunkRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;
};

// [0, n) cut into `chunks` contiguous ranges whose sizes differ by at most one element
// (`chunks` is lowered to n when n is smaller, so no range is empty). Throws invalid_argument for
// n < 0 or chunks < 1.
std::vector<ChunkRange> split_into_chunks(std::int64_t n, std::int64_t chunks);

// Fills `bytes` bytes (any count) with a pattern that depends on (seed, byte offset): what the
// transfer experiments move and compare.
void fill_pattern(void* data, std::size_t bytes, std::uint64_t seed);

}  // namespace cudalab::transfers
