#include "ops/memory/bank_patterns.hpp"

#include <algorithm>
#include <set>

#include "cudalab/error.hpp"

namespace cudalab::harness::memory_experiments {
namespace {

// Stride patterns walk words 0..1023 one word per step (wrapping), which shifts every lane's
// bank by one and keeps the lanes' words distinct, so the conflict degree never changes.
SharedPattern stride_pattern(int stride) {
  SharedPattern p;
  p.name = stride == 0 ? "broadcast" : "stride " + std::to_string(stride);
  p.stride = stride;
  p.next.resize(kPatternWords);
  for (std::uint32_t w = 0; w < kPatternWords; ++w) p.next[w] = (w + 1) % 1024;
  for (int lane = 0; lane < 32; ++lane) p.start[lane] = static_cast<std::uint32_t>(lane * stride);
  return p;
}

// A tile column read: lane l reads row l of a 32-row tile, column c at step c (mod 32). Each
// word belongs to one lane, so the next-word table is well defined.
enum class Tile { plain, padded, swizzled };
SharedPattern tile_pattern(Tile tile) {
  SharedPattern p;
  p.name = tile == Tile::plain    ? "tile column [32][32]"
           : tile == Tile::padded ? "tile column [32][33]"
                                  : "tile column [32][32] xor-swizzled";
  const std::uint32_t width = tile == Tile::padded ? 33 : 32;
  auto word = [&](std::uint32_t row, std::uint32_t col) {
    return row * width + (tile == Tile::swizzled ? (col ^ row) : col);
  };
  p.next.assign(kPatternWords, 0);
  for (std::uint32_t row = 0; row < 32; ++row) {
    p.start[row] = word(row, 0);
    for (std::uint32_t col = 0; col < 32; ++col) p.next[word(row, col)] = word(row, (col + 1) % 32);
  }
  return p;
}

}  // namespace

std::vector<SharedPattern> bank_conflict_patterns() {
  std::vector<SharedPattern> patterns;
  for (int stride : {1, 2, 3, 4, 8, 16, 32}) patterns.push_back(stride_pattern(stride));
  patterns.push_back(stride_pattern(0));
  for (Tile t : {Tile::plain, Tile::padded, Tile::swizzled}) patterns.push_back(tile_pattern(t));
  return patterns;
}

int conflict_ways(const std::array<std::uint32_t, 32>& words) {
  std::array<std::set<std::uint32_t>, kBanks> per_bank;
  for (std::uint32_t w : words) per_bank[w % kBanks].insert(w);
  std::size_t ways = 0;
  for (const auto& bank : per_bank) ways = std::max(ways, bank.size());
  return static_cast<int>(ways);
}

std::array<std::uint32_t, 32> words_at_step(const SharedPattern& pattern, int step) {
  CUDALAB_REQUIRE(step >= 0, "words_at_step: step must be >= 0");
  std::array<std::uint32_t, 32> words = pattern.start;
  for (int s = 0; s < step; ++s)
    for (auto& w : words) w = pattern.next[w];
  return words;
}

std::uint32_t chase_checksum(const SharedPattern& pattern, int lane, int steps) {
  std::uint32_t word = pattern.start[lane], sum = 0;
  for (int s = 0; s < steps; ++s) {
    word = pattern.next[word];
    sum += word;
  }
  return sum;
}

}  // namespace cudalab::harness::memory_experiments
