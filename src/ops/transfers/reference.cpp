#include "ops/transfers/reference.hpp"

#include <cstring>

#include "cudalab/error.hpp"
#include "harness/random.hpp"

namespace cudalab::transfers {

AffineMap affine_power(AffineMap map, std::int64_t iterations) {
  CUDALAB_REQUIRE(iterations >= 0, "affine_power: iterations must be >= 0, got " + std::to_string(iterations));
  AffineMap result;  // identity
  // Square-and-multiply: result = map^k, with (g after f)(x) = g.m * (f.m * x + f.i) + g.i.
  for (; iterations > 0; iterations >>= 1) {
    if (iterations & 1)
      result = {map.multiplier * result.multiplier, map.multiplier * result.increment + map.increment};
    map = {map.multiplier * map.multiplier, map.multiplier * map.increment + map.increment};
  }
  return result;
}

std::vector<ChunkRange> split_into_chunks(std::int64_t n, std::int64_t chunks) {
  CUDALAB_REQUIRE(n >= 0, "split_into_chunks: n must be >= 0, got " + std::to_string(n));
  CUDALAB_REQUIRE(chunks >= 1, "split_into_chunks: chunks must be >= 1, got " + std::to_string(chunks));
  if (n == 0) return {};
  if (chunks > n) chunks = n;
  std::vector<ChunkRange> ranges;
  ranges.reserve(static_cast<std::size_t>(chunks));
  const std::int64_t base = n / chunks, larger = n % chunks;  // the first `larger` get one more
  std::int64_t begin = 0;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t count = base + (c < larger ? 1 : 0);
    ranges.push_back({begin, count});
    begin += count;
  }
  return ranges;
}

namespace {
// One 64-bit word of the pattern per 8-byte slot; a partial last word keeps its low bytes.
std::uint64_t pattern_word(std::uint64_t seed, std::size_t word) { return harness::mix64(seed ^ harness::mix64(word)); }
}  // namespace

void fill_pattern(void* data, std::size_t bytes, std::uint64_t seed) {
  auto* out = static_cast<unsigned char*>(data);
  const std::size_t words = bytes / 8;
  for (std::size_t w = 0; w < words; ++w) {
    const std::uint64_t value = pattern_word(seed, w);
    std::memcpy(out + 8 * w, &value, 8);
  }
  if (const std::size_t tail = bytes % 8; tail != 0) {
    const std::uint64_t value = pattern_word(seed, words);
    std::memcpy(out + 8 * words, &value, tail);
  }
}

}  // namespace cudalab::transfers
