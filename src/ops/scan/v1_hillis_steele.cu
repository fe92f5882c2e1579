#include <string>

#include "core/launch.cuh"
#include "core/warp.cuh"
#include "ops/scan/block_scans.cuh"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {
namespace {

// One block; thread t scans element t. Every input is read before the first barrier and every
// output written after the last, so out may equal in.
template <ScanKind Kind, typename T>
__global__ void __launch_bounds__(1024) scan_hillis_steele_kernel(const T* in, T* out, int n) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const int t = static_cast<int>(threadIdx.x);
  const T x = t < n ? in[t] : T(0);
  T total;
  const T y = hillis_steele_block_scan<Kind>(x, reinterpret_cast<T*>(shared_bytes), &total);
  if (t < n) out[t] = y;
}

}  // namespace

template <typename T>
void hillis_steele(const ScanArgs<T>& args, cudaStream_t stream) {
  const std::int64_t n = args.n;
  if (n == 0) return;
  CUDALAB_REQUIRE(n <= kHillisSteeleMaxItems, "scan hillis_steele: one block scans at most " +
                                                  std::to_string(kHillisSteeleMaxItems) + " elements, got " +
                                                  std::to_string(n));
  // Whole warps: the threads past n scan zeros.
  const int threads = static_cast<int>(ceil_div<std::int64_t>(n, kWarpSize) * kWarpSize);
  const std::size_t shared = hillis_steele_shared_bytes<T>(threads);
  if (args.kind == ScanKind::inclusive) {
    scan_hillis_steele_kernel<ScanKind::inclusive>
        <<<1, threads, shared, stream>>>(args.in, args.out, static_cast<int>(n));
  } else {
    scan_hillis_steele_kernel<ScanKind::exclusive>
        <<<1, threads, shared, stream>>>(args.in, args.out, static_cast<int>(n));
  }
  CUDALAB_CHECK_LAUNCH();
}

template void hillis_steele(const ScanArgs<std::int32_t>&, cudaStream_t);
template void hillis_steele(const ScanArgs<float>&, cudaStream_t);

}  // namespace cudalab::scan_variants
