#include <climits>

#include <cub/device/device_scan.cuh>

#include "cudalab/error.hpp"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {
namespace {

// CUB picks its offset type from the count's type; a 32-bit count (what a caller with n < 2^31
// passes) gets 32-bit offsets, so the baseline runs the same code a typical program would.
template <typename T, typename Count>
void run(const T* in, T* out, Count n, ScanKind kind, Workspace& workspace, cudaStream_t stream) {
  std::size_t bytes = 0;
  if (kind == ScanKind::inclusive) {
    CUDALAB_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, n, stream));
    CUDALAB_CUDA_CHECK(cub::DeviceScan::InclusiveSum(workspace.reserve(bytes), bytes, in, out, n, stream));
  } else {
    CUDALAB_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, stream));
    CUDALAB_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(workspace.reserve(bytes), bytes, in, out, n, stream));
  }
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void cub_device_scan(const T* in, T* out, std::int64_t n, ScanKind kind, Workspace& workspace, cudaStream_t stream) {
  if (n == 0) return;
  if (n <= INT_MAX) {
    run(in, out, static_cast<int>(n), kind, workspace, stream);
  } else {
    run(in, out, n, kind, workspace, stream);
  }
}

template void cub_device_scan(const std::int32_t*, std::int32_t*, std::int64_t, ScanKind, Workspace&, cudaStream_t);
template void cub_device_scan(const float*, float*, std::int64_t, ScanKind, Workspace&, cudaStream_t);

}  // namespace cudalab::scan_variants
