// The host-copy cache: blocks come back for requests of between half their size and their size,
// the cache holds no more than its budget, and blocks under the smallest cached size are not kept.
#include <gtest/gtest.h>

#include "harness/host_blocks.hpp"

namespace cudalab::harness {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(HostBlocks, GivenBackBlockServesTheNextRequestOfItsSize) {
  HostBlockCache cache(64 * kMiB, false);
  unsigned char* first = nullptr;
  {
    HostBlock block = cache.acquire(8 * kMiB);
    first = block.data();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(block.capacity(), 8 * kMiB);
    EXPECT_FALSE(block.pinned());
    first[8 * kMiB - 1] = 7;  // the whole block is writable
  }
  EXPECT_EQ(cache.cached_bytes(), 8 * kMiB);
  HostBlock again = cache.acquire(5 * kMiB);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.capacity(), 8 * kMiB);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(HostBlocks, BlockMoreThanTwiceTheRequestIsNotHandedOut) {
  HostBlockCache cache(64 * kMiB, false);
  { HostBlock big = cache.acquire(16 * kMiB); }
  HostBlock small = cache.acquire(7 * kMiB);
  EXPECT_EQ(small.capacity(), 7 * kMiB);
  EXPECT_EQ(cache.cached_bytes(), 16 * kMiB);
}

TEST(HostBlocks, SmallestFittingBlockIsChosen) {
  HostBlockCache cache(64 * kMiB, false);
  {
    HostBlock a = cache.acquire(12 * kMiB);
    HostBlock b = cache.acquire(9 * kMiB);
  }
  HostBlock c = cache.acquire(8 * kMiB);
  EXPECT_EQ(c.capacity(), 9 * kMiB);
  EXPECT_EQ(cache.cached_bytes(), 12 * kMiB);
}

TEST(HostBlocks, CacheStaysWithinItsBudgetDroppingTheOldest) {
  HostBlockCache cache(20 * kMiB, false);
  unsigned char* newest = nullptr;
  {
    HostBlock a = cache.acquire(8 * kMiB);
    HostBlock b = cache.acquire(8 * kMiB);
    HostBlock c = cache.acquire(8 * kMiB);
    newest = c.data();
    // Destroyed c, b, a: a is given back last and c first, so c is the oldest and dropped.
  }
  EXPECT_EQ(cache.cached_bytes(), 16 * kMiB);
  HostBlock x = cache.acquire(8 * kMiB);
  HostBlock y = cache.acquire(8 * kMiB);
  EXPECT_NE(x.data(), newest);
  EXPECT_NE(y.data(), newest);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(HostBlocks, SmallAndOversizedBlocksAreNotKept) {
  HostBlockCache cache(8 * kMiB, false);
  { HostBlock small = cache.acquire(1000); }
  { HostBlock oversized = cache.acquire(9 * kMiB); }
  EXPECT_EQ(cache.cached_bytes(), 0u);
  HostBlock empty = cache.acquire(0);
  EXPECT_NE(empty.data(), nullptr);  // a zero-byte tensor still has an address
}

TEST(HostBlocks, MovedBlockIsGivenBackOnce) {
  HostBlockCache cache(64 * kMiB, false);
  {
    HostBlock a = cache.acquire(4 * kMiB);
    HostBlock b = std::move(a);
    EXPECT_EQ(a.data(), nullptr);
    HostBlock c;
    c = std::move(b);
  }
  EXPECT_EQ(cache.cached_bytes(), 4 * kMiB);
}

}  // namespace
}  // namespace cudalab::harness
