// The public library calls, as a program would use them: any alignment, aliasing, streams.
#include <cmath>
#include <cstring>
#include <vector>

#include "cudalab/memory.hpp"
#include "cudalab/reduce.hpp"
#include "cudalab/vecadd.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"

namespace cudalab {
namespace {

// Runs vecadd on sub-arrays starting `offset` floats into their buffers and checks them exactly.
void check_vecadd_at_offset(std::int64_t n, std::int64_t offset_a, std::int64_t offset_b, std::int64_t offset_c) {
  const std::int64_t room = n + 8;
  DeviceBuffer<float> a(room), b(room), c(room);
  Stream stream;
  harness::fill_random(a.data(), room, 11, harness::Distribution::uniform, stream.get());
  harness::fill_random(b.data(), room, 12, harness::Distribution::normal, stream.get());
  harness::poison(c.data(), c.bytes(), stream.get());
  vecadd(a.data() + offset_a, b.data() + offset_b, c.data() + offset_c, n, stream.get());
  std::vector<float> ha(room), hb(room), hc(room);
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(ha.data(), a.data(), a.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(hb.data(), b.data(), b.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(hc.data(), c.data(), c.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(hc[offset_c + i], ha[offset_a + i] + hb[offset_b + i]) << "i=" << i;
  // Nothing outside [offset_c, offset_c + n) may be written.
  for (std::int64_t i = 0; i < room; ++i) {
    if (i < offset_c || i >= offset_c + n) {
      ASSERT_TRUE(std::isnan(hc[i])) << "wrote outside the output at " << i;
    }
  }
}

TEST(LibraryVecadd, AlignedAndMisalignedPointers) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for (std::int64_t n : {1, 3, 4, 5, 1000003}) {
    check_vecadd_at_offset(n, 0, 0, 0);
    check_vecadd_at_offset(n, 1, 0, 3);  // mixed misalignment: the scalar path
    check_vecadd_at_offset(n, 2, 2, 2);  // same misalignment on all three
  }
}

TEST(LibraryVecadd, OutputMayAliasAnInput) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t n = 12345;
  DeviceBuffer<float> a(n), b(n);
  harness::fill_random(a.data(), n, 21, harness::Distribution::integers, nullptr);
  harness::fill_random(b.data(), n, 22, harness::Distribution::integers, nullptr);
  std::vector<float> ha(n), hb(n), hc(n);
  CUDALAB_CUDA_CHECK(cudaMemcpy(ha.data(), a.data(), a.bytes(), cudaMemcpyDeviceToHost));
  CUDALAB_CUDA_CHECK(cudaMemcpy(hb.data(), b.data(), b.bytes(), cudaMemcpyDeviceToHost));
  vecadd(a.data(), b.data(), a.data(), n);
  CUDALAB_CUDA_CHECK(cudaMemcpy(hc.data(), a.data(), a.bytes(), cudaMemcpyDeviceToHost));
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(hc[i], ha[i] + hb[i]) << i;
}

TEST(LibraryReduce, MisalignedInputsEmptyInputAndIntegerWrap) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t room = 1000003 + 8;
  DeviceBuffer<std::int32_t> values(room), result(1);
  harness::fill_random(values.data(), room, 31, harness::Distribution::large_magnitude, nullptr);
  std::vector<std::int32_t> host(room);
  CUDALAB_CUDA_CHECK(cudaMemcpy(host.data(), values.data(), values.bytes(), cudaMemcpyDeviceToHost));
  for (std::int64_t offset : {0, 1, 2, 3}) {
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{5}, std::int64_t{1000003}}) {
      reduce_sum(values.data() + offset, n, result.data());
      std::int32_t got = 0;
      CUDALAB_CUDA_CHECK(cudaMemcpy(&got, result.data(), sizeof got, cudaMemcpyDeviceToHost));
      std::uint32_t expected = 0;  // wrap-around sum
      for (std::int64_t i = 0; i < n; ++i) expected += static_cast<std::uint32_t>(host[offset + i]);
      ASSERT_EQ(got, static_cast<std::int32_t>(expected)) << "offset " << offset << " n " << n;
    }
  }
  CUDALAB_CUDA_CHECK(cudaMemset(result.data(), 0x7f, sizeof(std::int32_t)));
  reduce_sum(values.data(), 0, result.data());
  std::int32_t empty = -1;
  CUDALAB_CUDA_CHECK(cudaMemcpy(&empty, result.data(), sizeof empty, cudaMemcpyDeviceToHost));
  EXPECT_EQ(empty, 0);
}

TEST(LibraryReduce, FloatSumIsDeterministic) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t n = (1 << 24) + 3;
  DeviceBuffer<float> values(n), result(2);
  harness::fill_random(values.data(), n, 32, harness::Distribution::normal, nullptr);
  reduce_sum(values.data(), n, result.data());
  reduce_sum(values.data(), n, result.data() + 1);
  float sums[2];
  CUDALAB_CUDA_CHECK(cudaMemcpy(sums, result.data(), sizeof sums, cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::memcmp(&sums[0], &sums[1], sizeof(float)), 0);
}

// The caller-buffer calls give the same bits as the stream-ordered ones, and refuse a buffer
// smaller than reduce_sum_workspace_bytes(n).
TEST(LibraryReduce, CallerWorkspaceGivesTheSameSums) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t n = (1 << 22) + 7;
  DeviceBuffer<float> values(n), result(2);
  DeviceBuffer<double> wide(2);
  harness::fill_random(values.data(), n, 33, harness::Distribution::normal, nullptr);
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(reduce_sum_workspace_bytes(n)));
  reduce_sum(values.data(), n, result.data());
  reduce_sum(values.data(), n, result.data() + 1, workspace.data(), workspace.bytes());
  reduce_sum(values.data(), n, wide.data());
  reduce_sum(values.data(), n, wide.data() + 1, workspace.data(), workspace.bytes());
  float sums[2];
  double wide_sums[2];
  CUDALAB_CUDA_CHECK(cudaMemcpy(sums, result.data(), sizeof sums, cudaMemcpyDeviceToHost));
  CUDALAB_CUDA_CHECK(cudaMemcpy(wide_sums, wide.data(), sizeof wide_sums, cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::memcmp(&sums[0], &sums[1], sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(&wide_sums[0], &wide_sums[1], sizeof(double)), 0);
  EXPECT_THROW(reduce_sum(values.data(), n, result.data(), workspace.data(), 16), Error);
}

TEST(LibraryReduce, DoubleSumOfFloatsIsAccurateAndDeterministic) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t n = (1 << 24) + 5;
  DeviceBuffer<float> values(n);
  DeviceBuffer<double> result(2);
  harness::fill_random(values.data(), n, 33, harness::Distribution::uniform, nullptr);
  std::vector<float> host(n);
  CUDALAB_CUDA_CHECK(cudaMemcpy(host.data(), values.data(), values.bytes(), cudaMemcpyDeviceToHost));
  reduce_sum(values.data() + 1, n - 1, result.data());  // misaligned start
  reduce_sum(values.data() + 1, n - 1, result.data() + 1);
  double sums[2];
  CUDALAB_CUDA_CHECK(cudaMemcpy(sums, result.data(), sizeof sums, cudaMemcpyDeviceToHost));
  long double expected = 0, magnitude = 0;
  for (std::int64_t i = 1; i < n; ++i) {
    expected += host[i];
    magnitude += std::fabs(host[i]);
  }
  EXPECT_NEAR(sums[0], static_cast<double>(expected), 1e-12 * static_cast<double>(magnitude));
  EXPECT_EQ(std::memcmp(&sums[0], &sums[1], sizeof(double)), 0);
}

TEST(LibraryErrors, OutOfMemoryIsAnErrorNotACrash) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  try {
    DeviceBuffer<float> impossible(std::int64_t{1} << 50);
    FAIL() << "allocated 4 PiB";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("cannot allocate"), std::string::npos);
  }
  DeviceBuffer<float> fine(1024);  // the failure left no sticky error behind
  EXPECT_NE(fine.data(), nullptr);
}

}  // namespace
}  // namespace cudalab
