// The histogram ops without a GPU: the CPU reference they are checked against, their registry
// entries, and the library call's argument checks (which come before any CUDA call).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "error_kind.hpp"

#include "cudalab/error.hpp"
#include "cudalab/histogram.hpp"
#include "harness/registry.hpp"
#include "ops/histogram/ids.hpp"
#include "ops/histogram/reference.hpp"

namespace cudalab::harness {
namespace {

TEST(HistogramReference, CountsEachByteValue) {
  const std::vector<std::uint8_t> keys = {0, 255, 7, 7, 7, 128, 0};
  const std::vector<std::uint64_t> counts = reference_histogram(keys.data(), std::int64_t(keys.size()), 256);
  ASSERT_EQ(counts.size(), 256u);
  EXPECT_EQ(counts[0], 2u);
  EXPECT_EQ(counts[7], 3u);
  EXPECT_EQ(counts[128], 1u);
  EXPECT_EQ(counts[255], 1u);
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), std::uint64_t{0}), keys.size());
}

TEST(HistogramReference, EmptyInputGivesZeros) {
  const std::vector<std::uint64_t> counts = reference_histogram(static_cast<const std::uint16_t*>(nullptr), 0, 4096);
  ASSERT_EQ(counts.size(), 4096u);
  for (std::uint64_t c : counts) EXPECT_EQ(c, 0u);
}

TEST(HistogramReference, KeysAtOrAboveBinsAreNotCounted) {
  const std::vector<std::uint16_t> keys = {0, 4095, 4096, 65535, 4095};
  const std::vector<std::uint64_t> counts = reference_histogram(keys.data(), std::int64_t(keys.size()), 4096);
  EXPECT_EQ(counts[0], 1u);
  EXPECT_EQ(counts[4095], 2u);
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), std::uint64_t{0}), 3u);
}

// Large enough to be split over threads: the parts must add up to a sequential count.
TEST(HistogramReference, ParallelSplitMatchesASequentialCount) {
  const std::int64_t n = (std::int64_t{1} << 23) + 12345;
  std::vector<std::uint16_t> keys(n);
  for (std::int64_t i = 0; i < n; ++i) keys[i] = static_cast<std::uint16_t>((mix64(i) >> 48) % 5000);
  std::vector<std::uint64_t> expected(4096, 0);
  for (std::uint16_t k : keys)
    if (k < 4096) ++expected[k];
  EXPECT_EQ(reference_histogram(keys.data(), n, 4096), expected);
}

// One op for both sample types: bytes into 256 bins and 16-bit samples into 4096, each benched at
// 2^20 and 2^28 on uniform and all-one-value input and tested at the edge sizes.
TEST(HistogramRegistry, OpIsRegisteredWithBothCombinationsDistributionsAndEdgeSizes) {
  namespace ids = histogram_ids;
  const Op* op = builtin_registry().find_op(ids::kOp);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->dtypes, (std::vector<DType>{DType::u8, DType::u16}));
  EXPECT_EQ(op->bench_distributions, (std::vector<Distribution>{Distribution::uniform, Distribution::all_equal}));
  EXPECT_EQ(op->bench_problems.size(), 4u);
  for (const auto& [dtype, bins] : {std::pair<DType, int>{DType::u8, 256}, {DType::u16, 4096}}) {
    SCOPED_TRACE(to_string(dtype));
    for (std::int64_t n : {std::int64_t{1} << 20, std::int64_t{1} << 28}) {
      const Problem bench = op->problem({n}, dtype, {{ids::kBins, static_cast<double>(bins)}});
      EXPECT_NE(std::find(op->bench_problems.begin(), op->bench_problems.end(), bench), op->bench_problems.end())
          << bench.label();
    }
    std::set<std::int64_t> sizes;
    for (const Problem& p : op->test_problems) {
      if (p.dtype != dtype) continue;
      EXPECT_EQ(p.param(ids::kBins), bins);
      sizes.insert(p.dim("n"));
    }
    for (std::int64_t n : {0, 1, 31, 32, 33, 1000003, 1 << 24, 1 << 28}) EXPECT_TRUE(sizes.count(n)) << n;
  }
  ASSERT_NE(op->find_variant(ids::kCub), nullptr);
  EXPECT_EQ(op->find_variant(ids::kCub)->role, Role::baseline);
  EXPECT_TRUE(op->find_variant(ids::kCub)->workspace_bytes != nullptr);
  ASSERT_NE(op->find_variant(ids::kLaneColumns), nullptr);
  EXPECT_EQ(op->find_variant(ids::kLaneColumns)->dtypes, std::vector<DType>{DType::u8});
  EXPECT_EQ(op->find_variant(ids::kVectorized)->dtypes, (std::vector<DType>{DType::u8, DType::u16}));
}

TEST(HistogramRegistry, ByteVariantsRefuseOtherBinCounts) {
  const Op* op = builtin_registry().find_op(histogram_ids::kOp);
  ASSERT_NE(op, nullptr);
  const Variant* vectorized = op->find_variant(histogram_ids::kVectorized);
  ASSERT_NE(vectorized, nullptr);
  const DeviceInfo device{};
  EXPECT_EQ(why_not(*vectorized, device, op->problem({1000}, DType::u8)), "");
  EXPECT_NE(why_not(*vectorized, device, op->problem({1000}, DType::u8, {{histogram_ids::kBins, 100}})), "");
  EXPECT_EQ(why_not(*vectorized, device, op->problem({1000}, DType::u16, {{histogram_ids::kBins, 4096}})), "");
  EXPECT_NE(why_not(*vectorized, device, op->problem({1000}, DType::u16, {{histogram_ids::kBins, 4097}})), "");
  EXPECT_EQ(why_not(*op->find_variant(histogram_ids::kGlobalAtomics), device,
                    op->problem({1000}, DType::u16, {{histogram_ids::kBins, 65536}})),
            "");
}

TEST(HistogramRegistry, WorkModelReadsEachSampleOnceAndWritesTheBins) {
  const Op* op = builtin_registry().find_op(histogram_ids::kOp);
  ASSERT_NE(op, nullptr);
  const Work bytes = op->work(op->problem({1000}, DType::u8));
  EXPECT_DOUBLE_EQ(bytes.bytes_read, 1000);
  EXPECT_DOUBLE_EQ(bytes.bytes_written, 256 * 4);
  EXPECT_DOUBLE_EQ(bytes.flops, 0);
  const Work wide = op->work(op->problem({1000}, DType::u16, {{histogram_ids::kBins, 4096}}));
  EXPECT_DOUBLE_EQ(wide.bytes_read, 2000);
  EXPECT_DOUBLE_EQ(wide.bytes_written, 4096 * 4);
}

}  // namespace
}  // namespace cudalab::harness

namespace cudalab {
namespace {

// Validation throws before anything reaches the GPU, so these run on any machine.
TEST(HistogramLibrary, RejectsBadArgumentsBeforeTouchingTheGpu) {
  static std::uint32_t counts[1];
  static const std::uint8_t bytes[1] = {};
  static const std::uint16_t wide[1] = {};
  EXPECT_EQ(test_support::thrown_kind([] { histogram_even(bytes, -1, counts); }), ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([] { histogram_even(bytes, 10, nullptr); }), ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([] { histogram_even(static_cast<const std::uint8_t*>(nullptr), 10, counts); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([] { histogram_even(wide, 10, counts, 0); }), ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([] { histogram_even(wide, 10, counts, kMaxHistogramBins + 1); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([] { histogram_even(wide, -5, counts, 256); }), ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([] {
              histogram_even(reinterpret_cast<const std::uint16_t*>(reinterpret_cast<const char*>(wide) + 1), 10,
                             counts, 256);
            }),
            ErrorKind::invalid_argument);
}

}  // namespace
}  // namespace cudalab
