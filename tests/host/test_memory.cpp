// The memory page's host side: the bank-conflict patterns' arithmetic, the transpose's argument
// checks (which throw before touching a GPU) and the registry entries of both.
#include <set>

#include <gtest/gtest.h>

#include "cudalab/transpose.hpp"
#include "error_kind.hpp"
#include "harness/registry.hpp"
#include "ops/memory/bank_patterns.hpp"

namespace cudalab::harness::memory_experiments {
namespace {

int expected_ways(const std::string& name) {
  if (name == "stride 1" || name == "stride 3" || name == "broadcast") return 1;
  if (name == "stride 2") return 2;
  if (name == "stride 4") return 4;
  if (name == "stride 8") return 8;
  if (name == "stride 16") return 16;
  if (name == "stride 32" || name == "tile column [32][32]") return 32;
  return 1;  // padded and swizzled tiles
}

TEST(BankPatterns, EachKeepsItsConflictDegreeAtEveryStep) {
  for (const SharedPattern& p : bank_conflict_patterns()) {
    ASSERT_EQ(p.next.size(), static_cast<std::size_t>(kPatternWords)) << p.name;
    for (int step = 0; step < 70; ++step) {
      const auto words = words_at_step(p, step);
      EXPECT_EQ(conflict_ways(words), expected_ways(p.name)) << p.name << " step " << step;
      for (std::uint32_t w : words) ASSERT_LT(w, static_cast<std::uint32_t>(kPatternWords)) << p.name;
      // Lanes read distinct words, except the broadcast, where all read one.
      const std::set<std::uint32_t> distinct(words.begin(), words.end());
      EXPECT_EQ(distinct.size(), p.name == "broadcast" ? 1u : 32u) << p.name << " step " << step;
    }
  }
}

TEST(BankPatterns, ConflictWaysCountsDistinctWordsPerBank) {
  std::array<std::uint32_t, 32> words{};
  EXPECT_EQ(conflict_ways(words), 1);  // all lanes on word 0: a broadcast
  for (int lane = 0; lane < 32; ++lane) words[lane] = lane % 2 == 0 ? 0 : 32;
  EXPECT_EQ(conflict_ways(words), 2);  // two words in bank 0
}

TEST(BankPatterns, ChecksumReplaysTheChase) {
  const SharedPattern stride1 = bank_conflict_patterns().front();
  // Lane 3 starts at word 3 and reads 4, 5, 6.
  EXPECT_EQ(chase_checksum(stride1, 3, 3), 4u + 5u + 6u);
}

}  // namespace
}  // namespace cudalab::harness::memory_experiments

namespace cudalab {
namespace {

using test_support::thrown_kind;

TEST(TransposeArguments, AreChecked) {
  float* fake = reinterpret_cast<float*>(256);
  float* other = reinterpret_cast<float*>(512);
  EXPECT_EQ(thrown_kind([&] { transpose(fake, other, -1, 4); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { transpose(fake, other, 4, -1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { transpose(nullptr, other, 4, 4); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { transpose(fake, nullptr, 4, 4); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { transpose(fake, fake, 4, 4); }), ErrorKind::invalid_argument);
  transpose(nullptr, nullptr, 0, 5);  // nothing to move: no pointer needed
  transpose(nullptr, nullptr, 5, 0);
}

TEST(TransposeRegistry, IsShapedAndTestedOffTheTile) {
  const auto* op = harness::builtin_registry().find_op("transpose");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->dim_names, (std::vector<std::string>{"rows", "cols"}));
  bool off_tile = false;
  for (const auto& p : op->test_problems) off_tile |= p.dim("rows") % 32 != 0 && p.dim("cols") % 32 != 0;
  EXPECT_TRUE(off_tile);
  for (const char* name : {"coalescing_offset", "coalescing_stride", "gather_random", "aos_soa", "linked_list",
                           "bank_conflicts", "memory_latency"}) {
    const auto* e = harness::builtin_registry().find_experiment(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->op, "memory") << name;
  }
}

}  // namespace
}  // namespace cudalab
