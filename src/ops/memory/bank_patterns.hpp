// The shared-memory access patterns of the bank-conflict microbenchmark, built on the host. Each
// pattern is a pointer chase: lane l starts at word start[l], and word w of the table holds the
// word that lane goes to next, so every access depends on the previous one and the compiler
// cannot hoist or merge them. The patterns keep one conflict degree at every step.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cudalab::harness::memory_experiments {

inline constexpr int kBanks = 32;              // 4-byte banks per SM
inline constexpr int kPatternWords = 32 * 33;  // room for a padded 32x33 tile

struct SharedPattern {
  std::string name;                       // "stride 4", "broadcast", "tile column [32][33]", ...
  int stride = 0;                         // words between lanes for the stride patterns; 0 for the others
  std::vector<std::uint32_t> next;        // kPatternWords entries
  std::array<std::uint32_t, 32> start{};  // each lane's first word
};

// Strides 1, 2, 3, 4, 8, 16, 32 (lane l reads word l * stride, then moves on by one word),
// broadcast (every lane the same word), and the column read of a 32x32 tile: unpadded,
// padded to [32][33], and XOR-swizzled (column c of row r stored at c ^ r).
std::vector<SharedPattern> bank_conflict_patterns();

// The largest number of distinct words any one bank is asked for (1: conflict-free; a word
// several lanes share is served once, a broadcast).
int conflict_ways(const std::array<std::uint32_t, 32>& words);

// The 32 words the lanes of `pattern` read at step `step` (step 0: start).
std::array<std::uint32_t, 32> words_at_step(const SharedPattern& pattern, int step);

// Sum (mod 2^32) of the words lane `lane` reads in `steps` steps of the chase: what the kernel
// accumulates, so the host can check every value it loaded.
std::uint32_t chase_checksum(const SharedPattern& pattern, int lane, int steps);

}  // namespace cudalab::harness::memory_experiments
