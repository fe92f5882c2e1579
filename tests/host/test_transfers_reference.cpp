// The transfer experiments' host arithmetic: the pipeline kernel's closed form, the chunk plan,
// the byte pattern, and their registry entries.
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "error_kind.hpp"
#include "harness/registry.hpp"
#include "ops/transfers/reference.hpp"

namespace cudalab::transfers {
namespace {

using test_support::thrown_kind;

std::uint32_t apply_repeatedly(AffineMap map, std::int64_t iterations, std::uint32_t x) {
  for (std::int64_t k = 0; k < iterations; ++k) x = map.apply(x);
  return x;
}

TEST(TransfersReference, AffinePowerMatchesRepeatedApplication) {
  for (std::int64_t iterations : {0, 1, 2, 3, 7, 64, 255, 1000, 4097})
    for (std::uint32_t x : {0u, 1u, 12345u, 0xFFFFFFFFu}) {
      const AffineMap composed = affine_power(kPipelineStep, iterations);
      EXPECT_EQ(composed.apply(x), apply_repeatedly(kPipelineStep, iterations, x)) << iterations << " " << x;
    }
}

TEST(TransfersReference, AffinePowerOfZeroIsIdentityAndNegativeThrows) {
  const AffineMap identity = affine_power(kPipelineStep, 0);
  EXPECT_EQ(identity.multiplier, 1u);
  EXPECT_EQ(identity.increment, 0u);
  EXPECT_EQ(thrown_kind([] { affine_power(kPipelineStep, -1); }), ErrorKind::invalid_argument);
}

TEST(TransfersReference, ChunksCoverTheRangeExactlyAndDifferByAtMostOne) {
  for (std::int64_t n : {1, 2, 31, 32, 33, 1000003})
    for (std::int64_t chunks : {1, 2, 3, 7, 32, 1024}) {
      const auto ranges = split_into_chunks(n, chunks);
      ASSERT_EQ(static_cast<std::int64_t>(ranges.size()), std::min(n, chunks));
      std::int64_t next = 0, smallest = n, largest = 0;
      for (const ChunkRange& r : ranges) {
        EXPECT_EQ(r.begin, next);
        EXPECT_GT(r.count, 0);
        next += r.count;
        smallest = std::min(smallest, r.count);
        largest = std::max(largest, r.count);
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(largest - smallest, 1);
    }
}

TEST(TransfersReference, ChunksRejectBadArguments) {
  EXPECT_TRUE(split_into_chunks(0, 4).empty());
  EXPECT_EQ(thrown_kind([] { split_into_chunks(-1, 4); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([] { split_into_chunks(10, 0); }), ErrorKind::invalid_argument);
}

TEST(TransfersReference, PatternDependsOnSeedAndPrefixesAgree) {
  std::vector<unsigned char> a(1003), b(1003), c(517);
  fill_pattern(a.data(), a.size(), 7);
  fill_pattern(b.data(), b.size(), 8);
  fill_pattern(c.data(), c.size(), 7);
  EXPECT_NE(std::memcmp(a.data(), b.data(), a.size()), 0);
  EXPECT_EQ(std::memcmp(a.data(), c.data(), c.size()), 0);  // a shorter fill is a prefix (odd tail included)
}

TEST(TransfersReference, ExperimentsAndClaimsAreRegisteredOnTheTransfersPage) {
  const auto& registry = harness::builtin_registry();
  for (const char* name :
       {"transfers", "managed_memory", "streams_pipeline", "streams_chunk_size", "streams_concurrency"}) {
    const auto* e = registry.find_experiment(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->op, "transfers");
  }
  int claims = 0;
  for (const auto& c : registry.claims()) claims += c.page == "transfers";
  EXPECT_EQ(claims, 3);
}

TEST(TransfersReference, ClaimsAreSilentWithoutTheirTables) {
  const nlohmann::json empty = {{"experiments", nlohmann::json::array()}};
  for (const auto& c : harness::builtin_registry().claims()) {
    if (c.page == "transfers") {
      EXPECT_TRUE(c.evaluate(empty).is_null()) << c.id;
    }
  }
}

const harness::ClaimCheck& claim(const std::string& id) {
  for (const auto& c : harness::builtin_registry().claims())
    if (c.id == id) return c;
  throw std::logic_error("no claim " + id);
}

TEST(TransfersReference, C04ComparesPinnedWithPageableAtTheLargestSize) {
  const nlohmann::json columns = {"path",   "kind", "direction",           "bytes",  "median_us",
                                  "min_us", "gbps", "pct_of_probe_pinned", "samples"};
  const nlohmann::json results = {
      {"experiments",
       {{{"name", "transfers"},
         {"columns", columns},
         {"rows",
          {{"pageable H2D", "pageable", "H2D", 1024, 1, 1, 1.0, 2, 3},  // smaller size: ignored
           {"pageable H2D", "pageable", "H2D", 4096, 1, 1, 6.0, 10, 3},
           {"pinned H2D", "pinned", "H2D", 4096, 1, 1, 12.0, 20, 3},
           {"pinned D2H", "pinned", "D2H", 4096, 1, 1, 99.0, 20, 3}}}}}}};
  const nlohmann::json v = claim("C04").evaluate(results);
  EXPECT_DOUBLE_EQ(v["ratio"].get<double>(), 2.0);
  EXPECT_EQ(v["verdict"], "holds (about 2x)");
}

TEST(TransfersReference, C29ReadsSpeedupOrderAndBestStreamCount) {
  const nlohmann::json columns = {"config",
                                  "order",
                                  "streams",
                                  "chunks",
                                  "chunk_mib",
                                  "time_ms",
                                  "ideal_ms",
                                  "measured_over_ideal",
                                  "pct_of_ideal",
                                  "pct_of_duplex_bound",
                                  "speedup_vs_sequential",
                                  "samples"};
  const nlohmann::json results = {{"experiments",
                                   {{{"name", "streams_pipeline"},
                                     {"columns", columns},
                                     {"rows",
                                      {{"seq", "depth-first", 1, 1, 8, 30.0, 10.0, 3.0, 33.3, 36.0, 1.0, 5},
                                       {"d4", "depth-first", 4, 32, 8, 10.5, 10.0, 1.05, 95.2, 99.0, 2.86, 5},
                                       {"b4", "breadth-first", 4, 32, 8, 10.6, 10.0, 1.06, 94.3, 98.0, 2.83, 5}}}}}}};
  const nlohmann::json v = claim("C29").evaluate(results);
  EXPECT_NEAR(v["ratio"].get<double>(), 2.86, 1e-9);
  EXPECT_EQ(v["verdict"], "holds partly: speedup holds; issue order makes no 1.5x difference; best at 2-8 streams");
}

}  // namespace
}  // namespace cudalab::transfers
