// The transfer experiments' host arithmetic: the pipeline kernel's closed form, the chunk plan,
// the byte pattern, their registry entries, and the claims' part verdicts (C04, C29, C31).
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "claims_test_support.hpp"

#include "cudalab/all_reduce.hpp"
#include "error_kind.hpp"
#include "harness/registry.hpp"
#include "ops/transfers/all_reduce.hpp"
#include "ops/transfers/experiments.hpp"
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
  for (const char* name : {"transfers", "managed_memory", "streams_pipeline", "streams_chunk_size",
                           "streams_concurrency", "peer_transfers", "all_reduce"}) {
    const auto* e = registry.find_experiment(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->op, "transfers");
  }
  int claims = 0;
  for (const auto& c : registry.claims()) claims += c.page == "transfers";
  EXPECT_EQ(claims, 5);
}

TEST(TransfersReference, ClaimsAreSilentWithoutTheirTables) {
  const nlohmann::json empty = {{"experiments", nlohmann::json::array()}};
  for (const auto& c : harness::builtin_registry().claims()) {
    if (c.page == "transfers") {
      EXPECT_TRUE(c.evaluate(empty).is_null()) << c.id;
    }
  }
}

using test_support::claim_check;
using test_support::kHolds;
using test_support::kNot;
using test_support::kPartly;
using test_support::Outcomes;
using test_support::outcomes;

nlohmann::json transfers_table(double pinned_h2d, double pageable_h2d) {
  const nlohmann::json columns = {"path",   "kind", "direction",           "bytes",  "median_us",
                                  "min_us", "gbps", "pct_of_probe_pinned", "samples"};
  return {{"experiments",
           {{{"name", "transfers"},
             {"columns", columns},
             {"rows",
              {{"pageable H2D", "pageable", "H2D", 1024, 1, 1, 1.0, 2, 3},  // smaller size: ignored
               {"pageable H2D", "pageable", "H2D", 4096, 1, 1, pageable_h2d, 10, 3},
               {"pinned H2D", "pinned", "H2D", 4096, 1, 1, pinned_h2d, 20, 3},
               {"pinned D2H", "pinned", "D2H", 4096, 1, 1, 99.0, 20, 3}}}}}}};
}

TEST(TransfersReference, C04JudgesTheTwoAndTheFourAtTheLargestSize) {
  // The committed H100 run at 1 GiB: pinned 55.13, pageable 8.28 GB/s H2D (6.66x): both hold.
  nlohmann::json v = claim_check("C04").evaluate(transfers_table(55.13, 8.28));
  EXPECT_NEAR(v["ratio"].get<double>(), 6.658, 1e-3);
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kHolds}));
  // The first page's 12 vs 6: 2x holds, and it is half of the 4x's effect.
  v = claim_check("C04").evaluate(transfers_table(12, 6));
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kPartly}));
  EXPECT_EQ(v["parts"][1]["verdict"], "holds partly: right direction, 50% of the claimed effect");
  // Pageable as fast as pinned: neither.
  EXPECT_EQ(outcomes(claim_check("C04").evaluate(transfers_table(12, 12))), (Outcomes{kNot, kNot}));
}

// The streams_pipeline table: the committed H100 run's rows the claim reads (time_ms, speedup).
nlohmann::json pipeline_table(double breadth3_ms, double depth12_ms) {
  const nlohmann::json& columns = pipeline_columns();
  const double sequential = 14.330, ideal = 4.906;
  auto row = [&](const std::string& config, const std::string& order, int streams, double ms) {
    return nlohmann::json{config,           order, streams,         32, 8.0, ms, ideal, ms / ideal,
                          100 * ideal / ms, 0.0,   sequential / ms, 10};
  };
  nlohmann::json rows = {
      {"sequential (1 stream, no chunks)", "depth-first", 1, 1, 256.0, sequential, ideal, 2.92, 34.2, 39.6, 1.0, 10},
      row("1 streams, depth-first", "depth-first", 1, 15.014),
      row("2 streams, depth-first", "depth-first", 2, 8.023),
      row("3 streams, depth-first", "depth-first", 3, 6.184),
      row("4 streams, depth-first", "depth-first", 4, 5.973),
      row("12 streams, depth-first", "depth-first", 12, depth12_ms),
      row("2 streams, breadth-first", "breadth-first", 2, 10.110),
      row("3 streams, breadth-first", "breadth-first", 3, breadth3_ms),
      row("4 streams, breadth-first", "breadth-first", 4, 7.903),
      row("12 streams, breadth-first", "breadth-first", 12, 7.634),
      row("3 streams (one per stage), events between stages", "staged, events", 3, 5.783),
      row("4 streams, depth-first, as one CUDA graph", "depth-first", 4, 11.085)};
  return {{"experiments", {{{"name", "streams_pipeline"}, {"columns", columns}, {"rows", rows}}}}};
}

TEST(TransfersReference, C29JudgesSpeedupRangeIssueOrderAndStreamCount) {
  // Committed run: 2.32x at 3 streams (2.4x holds), best row 2.48x (3-4x within 1.5 of the range),
  // breadth-first 1.40x slower at 3 streams (1.5x holds), fastest sweep row at 4 streams.
  nlohmann::json v = claim_check("C29").evaluate(pipeline_table(8.680, 5.991));
  EXPECT_NEAR(v["ratio"].get<double>(), 14.330 / 6.184, 1e-9);
  EXPECT_NEAR(v["parts"][1]["measured"].get<double>(), 14.330 / 5.783, 1e-9);
  EXPECT_EQ(v["parts"][3]["measured"].get<double>(), 4.0);
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kPartly, kHolds, kHolds}));
  // Issue order that makes 5% of difference, and 12 streams fastest: outside 2-8, within 1.5 of it.
  v = claim_check("C29").evaluate(pipeline_table(6.184 * 1.05, 5.5));
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kPartly, kNot, kPartly}));
  EXPECT_EQ(v["parts"][2]["verdict"], "does not hold: right direction, 12% of the claimed effect");
}

nlohmann::json managed_table(double no_hint, double prefetch, double read_mostly) {
  const nlohmann::json columns = {"mib",  "scenario",           "timed",  "median_ms", "min_ms",
                                  "gbps", "explicit_over_this", "samples"};
  auto row = [](int mib, const std::string& scenario, double relative) {
    return nlohmann::json{mib, scenario, "", 1.0, 1.0, 1.0, relative, 5};
  };
  nlohmann::json rows = {
      row(16, "explicit pinned copy", 1.0),  row(16, "managed, no hint", 0.154),
      row(16, "managed, prefetch", 0.623),   row(256, "explicit pinned copy", 1.0),
      row(256, "managed, no hint", no_hint), row(256, "managed, advise preferred host + accessed by GPU", 0.956)};
  if (prefetch > 0) rows.push_back(row(256, "managed, prefetch", prefetch));
  if (read_mostly > 0) rows.push_back(row(256, "managed, advise read-mostly", read_mostly));
  return {{"experiments", {{{"name", "managed_memory"}, {"columns", columns}, {"rows", rows}}}}};
}

TEST(TransfersReference, C31JudgesEachHintAtTheLargestSize) {
  // Committed run at 256 MiB: no hint 0.22 of the explicit copy's speed, prefetch 0.91, preferred
  // host + accessed by GPU 0.96, read-mostly 0.12.
  nlohmann::json v = claim_check("C31").evaluate(managed_table(0.2165, 0.913, 0.120));
  EXPECT_NEAR(v["ratio"].get<double>(), 1 / 0.2165, 1e-9);
  EXPECT_EQ(outcomes(v), (Outcomes{kHolds, kHolds, kHolds, kNot}));
  // No hint at 0.9 of the explicit speed is not "slower"; prefetch not measured is named, not judged.
  v = claim_check("C31").evaluate(managed_table(0.9, 0, 0.7));
  EXPECT_EQ(outcomes(v), (Outcomes{kNot, kHolds, kPartly}));
  EXPECT_NE(v["measured"].get<std::string>().find("prefetch not measured on this device"), std::string::npos);
}

// A peer_transfers table of two GPUs: rows at 1 MiB (ignored: not the largest) and 256 MiB.
nlohmann::json peer_table(const std::string& link, double both_ways, double peer, double staged, double pull) {
  const nlohmann::json columns = {"pair",  "from",      "to",     "link", "peer_access", "path",
                                  "bytes", "median_us", "min_us", "gbps", "samples"};
  const double large = 268435456;
  nlohmann::json rows = nlohmann::json::array();
  for (const char* pair : {"0->1", "1->0"}) {
    rows.push_back({pair, 0, 1, link, "yes", "memcpy_peer_both_ways", 1048576, 1, 1, 9999.0, 3});
    rows.push_back({pair, 0, 1, link, "yes", "memcpy_peer_both_ways", large, 1, 1, both_ways, 3});
    rows.push_back({pair, 0, 1, link, "yes", "memcpy_peer", large, 1, 1, peer, 3});
    rows.push_back({pair, 0, 1, link, "yes", "memcpy_peer", 4, 1, 1, 0.001, 3});
    rows.push_back({pair, 0, 1, link, "yes", "host_staged", large, 1, 1, staged, 3});
    if (pull > 0) rows.push_back({pair, 0, 1, link, "yes", "sm_pull", large, 1, 1, pull, 3});
  }
  return {{"experiments", {{{"name", "peer_transfers"}, {"columns", columns}, {"rows", rows}}}}};
}

TEST(TransfersReference, C36AndC37JudgeThePeerTable) {
  // Two H200s over NVLink (the rates the multi-GPU notes quote: 783 GB/s both ways, 396 one way,
  // an SM pull 374) against about 25 GB/s through pinned host memory.
  const nlohmann::json nvlink = peer_table("NVLink", 783, 396, 25, 374);
  EXPECT_EQ(outcomes(claim_check("C36").evaluate(nvlink)), (Outcomes{kHolds}));
  EXPECT_EQ(outcomes(claim_check("C37").evaluate(nvlink)), (Outcomes{kHolds, kHolds}));
  // 600 GB/s both ways is 0.67x of 900: within 1.5x of the range, partly; 400 is not.
  EXPECT_EQ(outcomes(claim_check("C36").evaluate(peer_table("NVLink", 600, 300, 25, 0))), (Outcomes{kPartly}));
  EXPECT_EQ(outcomes(claim_check("C36").evaluate(peer_table("NVLink", 400, 200, 25, 0))), (Outcomes{kNot}));
  // Over PCIe there is no NVLink row to judge C36 by; a peer copy no faster than staging fails
  // C37, and without peer access its SM part is not there.
  const nlohmann::json pcie = peer_table("no NVLink", 50, 25, 25, 0);
  EXPECT_TRUE(claim_check("C36").evaluate(pcie).is_null());
  EXPECT_EQ(outcomes(claim_check("C37").evaluate(pcie)), (Outcomes{kNot}));
}

// The two-shot rung's parts: whole 16-byte vectors but the last, covering the elements once, in
// order, for counts of no multiple of anything and more GPUs than vectors.
TEST(TransfersReference, AllReducePartsCoverEveryElementOnce) {
  for (DType dtype : {DType::f32, DType::bf16})
    for (int gpus : {2, 3, 4, 8})
      for (std::int64_t count : {0, 1, 3, 7, 8, 9, 1000, 4097, 1 << 20}) {
        std::int64_t next = 0;
        const std::int64_t vector = 16 / static_cast<std::int64_t>(size_of(dtype));
        for (int g = 0; g < gpus; ++g) {
          const AllReducePart part = all_reduce_part(g, gpus, count, dtype);
          EXPECT_EQ(part.first, next) << gpus << " GPUs, " << count << ", part " << g;
          EXPECT_GE(part.count, 0);
          if (part.first + part.count < count) {
            EXPECT_EQ(part.count % vector, 0);
          }
          next = part.first + part.count;
        }
        EXPECT_EQ(next, count) << gpus << " GPUs, " << count << " elements";
      }
}

// The one-process-per-GPU all-reduce refuses bad arguments before it touches a GPU.
TEST(TransfersReference, AllReduceIpcValidatesBeforeTouchingTheGpu) {
  auto* x = reinterpret_cast<float*>(std::uintptr_t{0x10000});
  void* buffers[2] = {reinterpret_cast<void*>(std::uintptr_t{0x20000}),
                      reinterpret_cast<void*>(std::uintptr_t{0x30000})};
  unsigned* signals[2] = {reinterpret_cast<unsigned*>(std::uintptr_t{0x40000}),
                          reinterpret_cast<unsigned*>(std::uintptr_t{0x50000})};
  constexpr std::size_t kBytes = 64;  // 8 floats a call: half of it
  const auto refused = [&](float* at, std::int64_t count, std::size_t bytes, int rank, int gpus, unsigned epoch) {
    return thrown_kind([&] { all_reduce_ipc(at, count, buffers, bytes, signals, rank, gpus, epoch); }) ==
           ErrorKind::invalid_argument;
  };
  EXPECT_EQ(all_reduce_ipc_capacity<float>(kBytes), 8u);
  EXPECT_TRUE(refused(x, -1, kBytes, 0, 2, 1));
  EXPECT_TRUE(refused(x, 9, kBytes, 0, 2, 1));            // more than half the buffer
  EXPECT_TRUE(refused(x, 8, 48, 0, 2, 1));                // not a multiple of 32 bytes
  EXPECT_TRUE(refused(x, 8, kBytes, 2, 2, 1));            // rank outside the GPUs
  EXPECT_TRUE(refused(x, 8, kBytes, 0, 9, 1));            // more than 8 GPUs
  EXPECT_TRUE(refused(x, 8, kBytes, 0, 2, 0));            // epoch 0
  EXPECT_TRUE(refused(x, 8, kBytes, 0, 2, 0x80000000u));  // a barrier's value 2 epoch + 1 would wrap
  EXPECT_EQ(thrown_kind([&] { all_reduce_ipc(x, 8, buffers, kBytes, signals, 0, 2, 1, nullptr, 0.0); }),
            ErrorKind::invalid_argument);  // no time to wait
  EXPECT_TRUE(refused(reinterpret_cast<float*>(std::uintptr_t{0x10002}), 8, kBytes, 0, 2, 1));
  buffers[1] = reinterpret_cast<void*>(std::uintptr_t{0x30004});  // not 16-byte aligned
  EXPECT_TRUE(refused(x, 8, kBytes, 0, 2, 1));
  buffers[1] = nullptr;
  EXPECT_TRUE(refused(x, 8, kBytes, 0, 2, 1));
  EXPECT_NO_THROW(all_reduce_ipc(x, 0, buffers, kBytes, signals, 0, 2, 1));  // nothing to do
}

// nccl-tests' bus bandwidth: 2 (n - 1) / n of the algorithm's rate (1 at 2 GPUs, 1.5 at 4, 1.75
// at 8); the check's bound: n + 1 roundings to the output type of the magnitudes' sum.
TEST(TransfersReference, AllReduceBusBandwidthAndBound) {
  EXPECT_DOUBLE_EQ(all_reduce_bus_gbps(2e9, 2.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(all_reduce_bus_gbps(2e9, 2.0, 4), 1.5);
  EXPECT_DOUBLE_EQ(all_reduce_bus_gbps(2e9, 2.0, 8), 1.75);
  EXPECT_EQ(all_reduce_bus_gbps(1e9, 0.0, 2), 0.0);
  EXPECT_DOUBLE_EQ(all_reduce_bound(DType::f32, 2, 3.0), 3 * 3.0 * std::ldexp(1.0, -24));
  EXPECT_DOUBLE_EQ(all_reduce_bound(DType::bf16, 4, 1.0), 5 * std::ldexp(1.0, -8));
}

}  // namespace
}  // namespace cudalab::transfers
