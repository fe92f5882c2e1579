// The public selection call as a program would use it: misaligned inputs, none, about half and all
// kept, the caller's workspace, n = 0, and argument errors.
#include <vector>

#include "cudalab/memory.hpp"
#include "cudalab/select.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/select/reference.hpp"

namespace cudalab {
namespace {

enum class Placement { aligned, misaligned, caller_workspace };

void check_library_select(std::int64_t n, std::int32_t threshold, Placement placement) {
  SCOPED_TRACE("n=" + std::to_string(n) + " threshold " + std::to_string(threshold) + " placement " +
               std::to_string(static_cast<int>(placement)));
  // One element of slack so a misaligned view (offset 1) still holds n elements.
  const std::int64_t room = n + 1;
  const std::int64_t offset = placement == Placement::misaligned ? 1 : 0;
  DeviceBuffer<std::int32_t> in(room), out(room);
  DeviceBuffer<std::int64_t> count(1);
  Stream stream;
  harness::fill_random(in.data(), room, 41 + n, harness::Distribution::uniform, stream.get());
  std::vector<std::int32_t> host_in(room), host_out(room);
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_in.data(), in.data(), in.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  harness::poison(out.data(), out.bytes(), stream.get(), harness::kIntegerPoisonByte);
  harness::poison(count.data(), count.bytes(), stream.get(), harness::kIntegerPoisonByte);
  const std::int32_t* const source = in.data() + offset;
  std::int32_t* const result = out.data() + offset;
  if (placement == Placement::caller_workspace) {
    DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(select_workspace_bytes(n)));
    select_at_least(source, n, threshold, result, count.data(), workspace.data(), workspace.bytes(), stream.get());
    stream.synchronize();
  } else {
    select_at_least(source, n, threshold, result, count.data(), stream.get());
  }
  std::int64_t host_count = 0;
  CUDALAB_CUDA_CHECK(
      cudaMemcpyAsync(&host_count, count.data(), sizeof host_count, cudaMemcpyDeviceToHost, stream.get()));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_out.data(), result, static_cast<std::size_t>(n) * sizeof(std::int32_t),
                                     cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  const harness::Comparison c =
      harness::check_select(host_in.data() + offset, n, threshold, host_out.data(), host_count);
  EXPECT_TRUE(c.passed()) << c.summary();
}

TEST(LibrarySelect, NoneHalfAllKeptEveryPlacement) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  // Inputs are whole numbers in [-16, 16]: 17 keeps none, 0 about half, -16 all.
  for (std::int64_t n : {1, 33, 4096, 4097, 1000003})
    for (std::int32_t threshold : {17, 0, -16})
      for (Placement p : {Placement::aligned, Placement::misaligned, Placement::caller_workspace})
        check_library_select(n, threshold, p);
}

TEST(LibrarySelect, EmptyInputWritesCountZero) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<std::int64_t> count(1);
  Stream stream;
  harness::poison(count.data(), count.bytes(), stream.get(), harness::kIntegerPoisonByte);
  // n == 0 needs neither arrays nor a workspace.
  select_at_least(nullptr, 0, 0, nullptr, count.data(), stream.get());
  std::int64_t host_count = -1;
  CUDALAB_CUDA_CHECK(
      cudaMemcpyAsync(&host_count, count.data(), sizeof host_count, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  EXPECT_EQ(host_count, 0);
  harness::poison(count.data(), count.bytes(), stream.get(), harness::kIntegerPoisonByte);
  select_at_least(nullptr, 0, 0, nullptr, count.data(), nullptr, 0, stream.get());
  CUDALAB_CUDA_CHECK(
      cudaMemcpyAsync(&host_count, count.data(), sizeof host_count, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  EXPECT_EQ(host_count, 0);
  EXPECT_EQ(select_workspace_bytes(0), 0u);
}

TEST(LibrarySelect, ArgumentErrors) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<std::int32_t> data(100);
  DeviceBuffer<std::int64_t> count(1);
  EXPECT_EQ(test_support::thrown_kind([&] { select_at_least(data.data(), -1, 0, data.data(), count.data()); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([&] { select_at_least(data.data(), 10, 0, data.data(), nullptr); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([&] { select_at_least(nullptr, 10, 0, data.data(), count.data()); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([&] { select_at_least(data.data(), 10, 0, nullptr, count.data()); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind(
                [&] { select_at_least(data.data(), 100, 0, data.data(), count.data(), data.data(), 0); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind(
                [&] { select_at_least(data.data(), 100, 0, data.data(), count.data(), nullptr, 1 << 20); }),
            ErrorKind::invalid_argument);
  // One byte short of select_workspace_bytes is refused before anything is launched.
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(select_workspace_bytes(100)));
  EXPECT_EQ(test_support::thrown_kind([&] {
              select_at_least(data.data(), 100, 0, data.data(), count.data(), workspace.data(), workspace.bytes() - 1);
            }),
            ErrorKind::invalid_argument);
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace cudalab
