// cudalab::histogram_even as a program would call it: any alignment (the 16-byte kernels' head and
// tail), samples outside the bins, more bins than shared memory holds, n == 0 over stale counts.
#include <cstdint>
#include <vector>

#include "cudalab/histogram.hpp"
#include "cudalab/memory.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/histogram/reference.hpp"
#include "ops/histogram/variants.hpp"

namespace cudalab {
namespace {

// Copies `host` to the device, counts n samples from `offset` with `count` (the library call or a
// ladder variant) over poisoned counts, and compares every bin with the CPU reference.
template <typename Key, typename Count>
void check_at_offset(const std::vector<Key>& host, std::int64_t offset, std::int64_t n, int bins, Count count) {
  DeviceBuffer<Key> samples(static_cast<std::int64_t>(host.size()));
  DeviceBuffer<std::uint32_t> counts(bins);
  Stream stream;
  CUDALAB_CUDA_CHECK(
      cudaMemcpyAsync(samples.data(), host.data(), samples.bytes(), cudaMemcpyHostToDevice, stream.get()));
  harness::poison(counts.data(), counts.bytes(), stream.get(), harness::kIntegerPoisonByte);
  count(samples.data() + offset, n, counts.data(), stream.get());
  std::vector<std::uint32_t> out(bins);
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(out.data(), counts.data(), counts.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  const std::vector<std::uint64_t> expected = harness::reference_histogram(host.data() + offset, n, bins);
  for (int b = 0; b < bins; ++b) ASSERT_EQ(out[b], expected[b]) << "bin " << b << ", offset " << offset << ", n " << n;
}

void check_at_offset(const std::vector<std::uint8_t>& host, std::int64_t offset, std::int64_t n) {
  check_at_offset(
      host, offset, n, kByteHistogramBins,
      [](const std::uint8_t* s, std::int64_t m, std::uint32_t* c, cudaStream_t st) { histogram_even(s, m, c, st); });
}

void check_at_offset(const std::vector<std::uint16_t>& host, std::int64_t offset, std::int64_t n, int bins) {
  check_at_offset(host, offset, n, bins,
                  [bins](const std::uint16_t* s, std::int64_t m, std::uint32_t* c, cudaStream_t st) {
                    histogram_even(s, m, c, bins, st);
                  });
}

// The lane_columns ladder step, called as the library is.
void lane_columns(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, cudaStream_t stream) {
  histogram_variants::HistogramArgs<std::uint8_t> args;
  args.samples = samples;
  args.n = n;
  args.counts = counts;
  args.bins = kByteHistogramBins;
  histogram_variants::lane_columns(args, stream);
}

std::vector<std::uint8_t> random_bytes(std::int64_t count) {
  std::vector<std::uint8_t> v(count);
  for (std::int64_t i = 0; i < count; ++i) v[i] = static_cast<std::uint8_t>(harness::mix64(i) >> 56);
  return v;
}

TEST(LibraryHistogram, BytesAtAnyAlignment) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::vector<std::uint8_t> host = random_bytes(1000003 + 64);
  for (std::int64_t offset : {0, 1, 7, 15, 16, 17})
    for (std::int64_t n : {0, 1, 15, 16, 17, 31, 1000003}) {
      check_at_offset(host, offset, n);
      // lane_columns has its own head and tail handling.
      check_at_offset(host, offset, n, kByteHistogramBins, lane_columns);
    }
}

TEST(LibraryHistogram, WideSamplesOutsideTheBinsAreNotCounted) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  std::vector<std::uint16_t> host(1000003 + 64);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint16_t>(harness::mix64(i) >> 48);
  for (int bins : {1, 100, 4096, 4097, 65536})
    for (std::int64_t offset : {0, 1, 3, 8})
      for (std::int64_t n : {0, 7, 9, 1000003}) check_at_offset(host, offset, n, bins);
}

TEST(LibraryHistogram, AllOneValueOverSeveralCounterRounds) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  // 1 GiB of one value, one bin holding all of it. On an H100 each thread of lane_columns counts
  // more vectors than one round allows its 16-bit counters, so its merge-and-clear between
  // rounds runs; the registry's test sizes stay within one round.
  const std::vector<std::uint8_t> host(std::size_t{1} << 30, 200);
  const std::int64_t n = static_cast<std::int64_t>(host.size()) - 3;
  check_at_offset(host, 3, n);
  check_at_offset(host, 3, n, kByteHistogramBins, lane_columns);
}

}  // namespace
}  // namespace cudalab
