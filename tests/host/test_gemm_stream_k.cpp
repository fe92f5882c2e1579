// The stream-K schedule without a GPU: over shapes of few and many tiles, short and long k, grids
// smaller and larger than the work, with and without snapping, with and without whole
// data-parallel tiles first, every (tile, k-step) is computed exactly once; a unit's data-parallel
// tiles come first in its walk, u, u + units, ...; it publishes at most once and owns at most
// once, the publish first after those and the owned piece last; each split tile has one owner, the last piece in k,
// whose peers are exactly the other pieces' units, all lower, each publishing that tile; ranges are balanced, and no
// boundary stops within `snap` k-steps of a tile edge.
#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "ops/gemm/stream_k.hpp"

namespace cudalab::gemm_variants {
namespace {

struct Seen {
  int unit;
  StreamKPiece piece;
};

void check_plan(const StreamKPlan& plan) {
  SCOPED_TRACE(testing::Message() << plan.tiles << " tiles x " << plan.k_steps << " k-steps over " << plan.units
                                  << " units, snap " << plan.snap << ", " << plan.dp_tiles << " whole first");
  ASSERT_EQ(plan.dp_tiles % plan.units, 0);
  const int dp_count = plan.dp_tiles / plan.units;
  std::vector<int> covered(static_cast<std::size_t>(plan.tiles) * static_cast<std::size_t>(plan.k_steps), 0);
  std::map<int, std::vector<Seen>> by_tile;
  std::int64_t shortest = plan.stream_iterations(), longest = 0;
  for (int u = 0; u < plan.units; ++u) {
    ASSERT_LE(plan.boundary(u), plan.boundary(u + 1)) << "boundaries in order";
    const std::int64_t into = plan.boundary(u) % plan.k_steps;
    EXPECT_TRUE(into == 0 || (into > plan.snap && plan.k_steps - into > plan.snap))
        << "boundary " << u << " within " << plan.snap << " k-steps of a tile edge";
    const std::int64_t length = plan.boundary(u + 1) - plan.boundary(u);
    shortest = std::min(shortest, length);
    longest = std::max(longest, length);
    std::vector<StreamKPiece> walk;
    plan.for_each_piece(u, [&](const StreamKPiece& p) { walk.push_back(p); });
    int publishes = 0, owns = 0;
    ASSERT_GE(walk.size(), static_cast<std::size_t>(dp_count));
    for (std::size_t i = 0; i < walk.size(); ++i) {
      const StreamKPiece& p = walk[i];
      ASSERT_GT(p.k_count, 0);
      if (i < static_cast<std::size_t>(dp_count)) {
        EXPECT_EQ(p.role, StreamKRole::whole);
        EXPECT_EQ(p.tile, u + static_cast<int>(i) * plan.units) << "data-parallel tiles in turn";
      } else {
        EXPECT_GE(p.tile, plan.dp_tiles) << "stream-K pieces after the data-parallel tiles";
      }
      ASSERT_LE(p.first_k + p.k_count, plan.k_steps);
      if (p.role == StreamKRole::publish) {
        ++publishes;
        EXPECT_EQ(i, static_cast<std::size_t>(dp_count)) << "the publish comes first after the whole tiles";
        EXPECT_LT(p.first_k + p.k_count, plan.k_steps) << "a published piece does not reach the tile's end";
      }
      if (p.role == StreamKRole::owner) {
        ++owns;
        EXPECT_EQ(i, walk.size() - 1) << "the owned piece comes last";
        EXPECT_EQ(p.first_k + p.k_count, plan.k_steps) << "the owner holds the tile's last k-step";
        EXPECT_GT(p.first_k, 0);
        EXPECT_LT(p.first_peer, u);
      }
      if (p.role == StreamKRole::whole) {
        EXPECT_TRUE(p.first_k == 0 && p.k_count == plan.k_steps);
      }
      for (int s = p.first_k; s < p.first_k + p.k_count; ++s)
        ++covered[static_cast<std::size_t>(static_cast<std::int64_t>(p.tile) * plan.k_steps + s)];
      by_tile[p.tile].push_back({u, p});
    }
    EXPECT_LE(publishes, 1);
    EXPECT_LE(owns, 1);
  }
  EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; })) << "each iteration once";
  if (plan.snap == 0) {
    EXPECT_LE(longest - shortest, 1) << "ranges balanced to one iteration";
  }
  for (const auto& [tile, pieces] : by_tile) {
    if (pieces.size() == 1) {
      EXPECT_EQ(pieces[0].piece.role, StreamKRole::whole) << "tile " << tile;
      continue;
    }
    const auto owner =
        std::find_if(pieces.begin(), pieces.end(), [](const Seen& s) { return s.piece.role == StreamKRole::owner; });
    ASSERT_NE(owner, pieces.end()) << "tile " << tile << " has an owner";
    std::vector<int> peers;
    for (const Seen& s : pieces) {
      if (s.unit == owner->unit) continue;
      EXPECT_EQ(s.piece.role, StreamKRole::publish) << "tile " << tile;
      EXPECT_LT(s.piece.first_k, owner->piece.first_k);
      peers.push_back(s.unit);
    }
    std::vector<int> expected;
    for (int u = owner->piece.first_peer; u < owner->unit; ++u)
      if (plan.boundary(u) < plan.boundary(u + 1)) expected.push_back(u);
    EXPECT_EQ(peers, expected) << "tile " << tile << ": the owner's peers are the other pieces' units";
  }
}

TEST(GemmStreamK, EveryIterationOnceOnePublishOneOwnerPerUnit) {
  for (int tiles : {1, 2, 7, 32, 96, 133, 264})
    for (int k_steps : {1, 3, 16, 65, 128})
      for (int units : {1, 2, 7, 96, 132, 300})
        for (int snap : {0, 4}) {
          if (2 * snap >= k_steps) continue;
          check_plan({tiles, k_steps, units, snap});
          check_plan(stream_k_plan(tiles, k_steps, units, snap));
        }
}

// The GPT weight gradient 3072 x 1024 x 8192 in 128 x 256 tiles on 132 SMs: 96 tiles of 128
// k-steps, 93 or 94 iterations a unit; no tile in more than three pieces.
TEST(GemmStreamK, AWeightGradientOn132Units) {
  const StreamKPlan plan{96, 128, 132, 4};
  check_plan(plan);
  std::map<int, int> pieces;
  for (int u = 0; u < plan.units; ++u) plan.for_each_piece(u, [&](const StreamKPiece& p) { ++pieces[p.tile]; });
  for (const auto& [tile, count] : pieces) EXPECT_LE(count, 3) << "tile " << tile;
  EXPECT_EQ(plan.boundary(plan.units), 96 * 128);
}

// The hybrid plan: whole waves of tiles leave nothing to split; two or more waves and a remainder
// keep all but the last one to two waves whole; under two waves, every tile is in the stream-K part.
TEST(GemmStreamK, HybridKeepsAllButTheLastWavesWhole) {
  EXPECT_EQ(stream_k_plan(264, 64, 132, 4).dp_tiles, 264);  // two whole waves
  EXPECT_EQ(stream_k_plan(512, 64, 132, 4).dp_tiles, 264);  // 3.9 waves: 248 tiles split, 1.9 waves
  EXPECT_EQ(stream_k_plan(300, 64, 132, 4).dp_tiles, 132);
  EXPECT_EQ(stream_k_plan(200, 64, 132, 4).dp_tiles, 0);  // 1.5 waves
  EXPECT_EQ(stream_k_plan(96, 128, 132, 4).dp_tiles, 0);
  const StreamKPlan whole = stream_k_plan(264, 64, 132, 4);
  for (int u = 0; u < whole.units; ++u) {
    std::vector<StreamKPiece> walk;
    whole.for_each_piece(u, [&](const StreamKPiece& p) { walk.push_back(p); });
    ASSERT_EQ(walk.size(), 2u);
    EXPECT_TRUE(walk[0].role == StreamKRole::whole && walk[1].role == StreamKRole::whole);
  }
  for (int tiles : {264, 265, 399, 512, 1000})
    for (int units : {7, 132}) check_plan(stream_k_plan(tiles, 64, units, 4));
  // No k-steps, hence no units: a plan of nothing, not a division by zero.
  EXPECT_EQ(stream_k_plan(5, 0, 0, 0).dp_tiles, 0);
}

// The plan's arithmetic is 32-bit: a plan of 2^31 - 32768 iterations is taken and ends there
// (no overflow on the way), one of 2^31 is refused (the launch runs the persistent schedule then).
TEST(GemmStreamK, ThirtyTwoBitIterations) {
  const StreamKPlan large{65535, 32768, 132, 4};
  EXPECT_TRUE(large.fits_32_bits());
  EXPECT_EQ(large.boundary(large.units), 65535 * 32768);
  for (int u = 0; u < large.units; ++u) EXPECT_LT(large.boundary(u), large.boundary(u + 1));
  EXPECT_FALSE((StreamKPlan{65536, 32768, 132, 4}.fits_32_bits()));
}

}  // namespace
}  // namespace cudalab::gemm_variants
