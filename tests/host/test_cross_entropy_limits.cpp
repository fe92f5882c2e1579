// Which rows the cross-entropy rungs that keep rows in shared memory take, from a GPU's opt-in
// shared memory per block, and the library's rung for each shape, decided before anything touches a
// GPU.
#include <cstddef>

#include <gtest/gtest.h>

#include "ops/cross_entropy/variants.hpp"

namespace cudalab {
namespace {

namespace v = cross_entropy_variants;
constexpr std::size_t kHopper = 232448;  // opt-in shared memory per block: H100, H200
constexpr std::size_t kSm86 = 101376;

TEST(CrossEntropyLimits, PipelinedTakesRowsOfWhichTwoFit) {
  EXPECT_EQ(v::pipelined_buffer_bytes(50257, 2), 100544);  // 100514 bytes and 16 of alignment, whole vectors
  EXPECT_EQ(v::pipelined_limits(50257, 2, kHopper), "");
  EXPECT_EQ(v::pipelined_limits(28000, 4, kHopper), "");
  EXPECT_NE(v::pipelined_limits(65537, 2, kHopper), "");  // one row fits, two do not
  EXPECT_NE(v::pipelined_limits(32000, 4, kHopper), "");
  EXPECT_NE(v::pipelined_limits(32000, 2, kSm86), "");
  EXPECT_EQ(v::pipelined_limits(16000, 2, kSm86), "");
}

TEST(CrossEntropyLimits, ResidentTakesRowsUpTo200KiBThatFit) {
  EXPECT_EQ(v::resident_limits(50257, 4, kHopper), "");  // 201028 bytes
  EXPECT_NE(v::resident_limits(128256, 2, kHopper), "");
  EXPECT_NE(v::resident_limits(50257, 2, kSm86), "");
}

TEST(CrossEntropyLimits, ClusterSplitsARowIntoSharesOf64KiB) {
  EXPECT_EQ(v::cluster_ctas(32000, 2), 2);  // at least two: a one-CTA cluster has no peer to exchange with
  EXPECT_EQ(v::cluster_ctas(50257, 2), 2);
  EXPECT_EQ(v::cluster_ctas(65537, 2), 3);
  EXPECT_EQ(v::cluster_ctas(128256, 2), 4);
  EXPECT_EQ(v::cluster_ctas(256000, 2), 8);
  EXPECT_EQ(v::cluster_limits(256000, 2, 90), "");
  EXPECT_EQ(v::cluster_limits(128256, 4, 90), "");
  EXPECT_NE(v::cluster_limits(262145, 2, 90), "") << "nine shares";
  EXPECT_NE(v::cluster_limits(256001, 4, 90), "");
  EXPECT_EQ(v::cluster_limits(32000, 2, 80), "needs thread-block clusters (compute capability 9.0+)");
}

// The rule as measured on an H200 (docs/cross_entropy.md, "The library's choice").
TEST(CrossEntropyLimits, LibraryRungByRowsPerSmAndRowWidth) {
  using R = v::LibraryRung;
  const auto rung = [](std::int64_t rows, std::int64_t vocab, std::size_t bytes, bool capped = false, bool match = true,
                       int cc = 90) {
    return v::library_rung({rows, vocab, bytes, capped, match, 132, cc, cc >= 90 ? kHopper : kSm86});
  };
  // Rows that two resident blocks hold keep resident (two rows an SM and up) or persistent.
  EXPECT_EQ(rung(4096, 32000, 2), R::resident);
  EXPECT_EQ(rung(4096, 50257, 2), R::resident);
  EXPECT_EQ(rung(264, 50257, 2), R::resident);
  EXPECT_EQ(rung(263, 50257, 2), R::persistent);
  EXPECT_EQ(rung(64, 32000, 2), R::persistent);
  // Wider rows: cluster from three rows an SM, and at half a row an SM or less.
  EXPECT_EQ(rung(4096, 65536, 2), R::cluster);
  EXPECT_EQ(rung(396, 128256, 2), R::cluster);
  EXPECT_EQ(rung(395, 128256, 2), R::online_vectorized);
  EXPECT_EQ(rung(264, 256000, 2), R::online_vectorized);
  EXPECT_EQ(rung(132, 128256, 4), R::persistent);
  EXPECT_EQ(rung(67, 65536, 2), R::persistent);
  EXPECT_EQ(rung(66, 65536, 2), R::cluster);
  EXPECT_EQ(rung(1, 256000, 2), R::cluster);
  EXPECT_EQ(rung(2048, 50257, 4), R::cluster);  // f32 rows of 201 KB: one resident block an SM
  // Not cluster: a softcap, rows that no cluster holds, a gradient misaligned against the logits,
  // or a GPU without clusters.
  EXPECT_EQ(rung(4096, 128256, 2, true), R::online_vectorized);
  EXPECT_EQ(rung(64, 128256, 2, true), R::persistent);
  EXPECT_EQ(rung(4096, 262145, 2), R::online_vectorized);
  EXPECT_EQ(rung(4096, 200000, 4), R::online_vectorized);
  EXPECT_EQ(rung(4096, 128256, 2, false, false), R::online_vectorized);
  EXPECT_EQ(rung(4096, 128256, 2, false, true, 80), R::online_vectorized);
  EXPECT_EQ(rung(4096, 128256, 2, false, true, 100), R::online_vectorized);  // measured on 9.0 only
  EXPECT_EQ(rung(4096, 32000, 2, false, true, 80), R::online_vectorized);    // one 64 KB row a block fits, two do not
}

}  // namespace
}  // namespace cudalab
