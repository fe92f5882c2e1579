// The public scan calls as a program would use them: both kinds and types, misaligned and
// in-place arrays, the caller's workspace, and argument errors.
#include <vector>

#include "cudalab/memory.hpp"
#include "cudalab/scan.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/scan/reference.hpp"

namespace cudalab {
namespace {

using scan_variants::ScanKind;

enum class Placement { aligned, misaligned, in_place, caller_workspace };

template <typename T>
void call(ScanKind kind, const T* in, T* out, std::int64_t n, void* workspace, std::size_t bytes, cudaStream_t s) {
  if (workspace != nullptr) {
    kind == ScanKind::inclusive ? inclusive_scan(in, out, n, workspace, bytes, s)
                                : exclusive_scan(in, out, n, workspace, bytes, s);
  } else {
    kind == ScanKind::inclusive ? inclusive_scan(in, out, n, s) : exclusive_scan(in, out, n, s);
  }
}

template <typename T>
void check_library_scan(ScanKind kind, std::int64_t n, Placement placement) {
  SCOPED_TRACE("n=" + std::to_string(n) + " placement " + std::to_string(static_cast<int>(placement)));
  // One element of slack so a misaligned view (offset 1) still holds n elements.
  const std::int64_t room = n + 1;
  const std::int64_t offset = placement == Placement::misaligned ? 1 : 0;
  DeviceBuffer<T> in(room), out(room);
  Stream stream;
  harness::fill_random(in.data(), room, 31 + n, harness::Distribution::normal, stream.get());
  std::vector<T> host_in(room), host_out(room);
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_in.data(), in.data(), in.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  const unsigned char poison = std::is_integral_v<T> ? harness::kIntegerPoisonByte : harness::kFloatPoisonByte;
  harness::poison(out.data(), out.bytes(), stream.get(), poison);
  DeviceBuffer<unsigned char> workspace(
      placement == Placement::caller_workspace ? static_cast<std::int64_t>(scan_workspace_bytes(n)) : 0);
  T* const result = placement == Placement::in_place ? in.data() : out.data() + offset;
  call(kind, in.data() + offset, result, n, workspace.data(), workspace.bytes(), stream.get());
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_out.data(), result, static_cast<std::size_t>(n) * sizeof(T),
                                     cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  const harness::Comparison c = harness::check_scan(host_in.data() + offset, host_out.data(), n, kind);
  EXPECT_TRUE(c.passed()) << c.summary();
}

TEST(LibraryScan, BothKindsBothTypesEveryPlacement) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive})
    for (std::int64_t n : {1, 1000, 4096, 4097, 1000003})
      for (Placement p :
           {Placement::aligned, Placement::misaligned, Placement::in_place, Placement::caller_workspace}) {
        check_library_scan<std::int32_t>(kind, n, p);
        check_library_scan<float>(kind, n, p);
      }
}

TEST(LibraryScan, ArgumentErrors) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<float> data(100);
  EXPECT_EQ(test_support::thrown_kind([&] { inclusive_scan(data.data(), data.data(), -1); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([&] { exclusive_scan(static_cast<const float*>(nullptr), data.data(), 10); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([&] { inclusive_scan(data.data(), data.data(), 100, data.data(), 0); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([&] { inclusive_scan(data.data(), data.data(), 100, nullptr, 1 << 20); }),
            ErrorKind::invalid_argument);
  // One byte short of scan_workspace_bytes is refused before anything is launched.
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(scan_workspace_bytes(100)));
  EXPECT_EQ(test_support::thrown_kind(
                [&] { inclusive_scan(data.data(), data.data(), 100, workspace.data(), workspace.bytes() - 1); }),
            ErrorKind::invalid_argument);
  // n == 0 touches nothing, null pointers included.
  EXPECT_NO_THROW(inclusive_scan(static_cast<const std::int32_t*>(nullptr), nullptr, 0));
  EXPECT_EQ(scan_workspace_bytes(0), 0u);
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace cudalab
