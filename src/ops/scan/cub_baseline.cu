#include <climits>

#include <cub/device/device_scan.cuh>

#include "cudalab/error.hpp"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {
namespace {

// CUB picks its offset type from the count's type; a 32-bit count (what a caller with n < 2^31
// passes) gets 32-bit offsets, so the baseline runs the same code a typical program would. With
// a null `temp` CUB only sets `bytes` (its size query); otherwise it scans.
template <typename T, typename Count>
void run(void* temp, std::size_t& bytes, const T* in, T* out, Count n, ScanKind kind, cudaStream_t stream) {
  if (kind == ScanKind::inclusive) {
    CUDALAB_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, out, n, stream));
  } else {
    CUDALAB_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, n, stream));
  }
}

template <typename T>
void dispatch(void* temp, std::size_t& bytes, const ScanArgs<T>& args, cudaStream_t stream) {
  if (args.n <= INT_MAX) {
    run(temp, bytes, args.in, args.out, static_cast<int>(args.n), args.kind, stream);
  } else {
    run(temp, bytes, args.in, args.out, args.n, args.kind, stream);
  }
}

}  // namespace

template <typename T>
std::size_t cub_device_scan_workspace_bytes(const ScanArgs<T>& args) {
  if (args.n == 0) return 0;
  std::size_t bytes = 0;
  dispatch(nullptr, bytes, args, nullptr);
  return bytes;
}

template <typename T>
void cub_device_scan(const ScanArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  std::size_t bytes = cub_device_scan_workspace_bytes(args);
  void* const temp = workspace_of(args, bytes, "scan cub");
  dispatch(temp, bytes, args, stream);
  CUDALAB_CHECK_LAUNCH();
}

template void cub_device_scan(const ScanArgs<std::int32_t>&, cudaStream_t);
template void cub_device_scan(const ScanArgs<float>&, cudaStream_t);
template std::size_t cub_device_scan_workspace_bytes(const ScanArgs<std::int32_t>&);
template std::size_t cub_device_scan_workspace_bytes(const ScanArgs<float>&);

}  // namespace cudalab::scan_variants
