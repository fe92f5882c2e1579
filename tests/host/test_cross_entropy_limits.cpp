// Which rows the cross-entropy rungs that keep rows in shared memory take, from a GPU's opt-in
// shared memory per block, decided before anything touches a GPU.
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

}  // namespace
}  // namespace cudalab
