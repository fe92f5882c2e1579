#include <string>

#include "core/launch.cuh"
#include "ops/scan/block_scans.cuh"
#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {
namespace {

// One block of blockDim.x threads scans up to 2 * blockDim.x elements, two per thread. Every
// input is read before the first barrier and every output written after the last, so out may
// equal in.
template <ScanKind Kind, bool Padded, typename T>
__global__ void __launch_bounds__(1024) scan_blelloch_kernel(const T* in, T* out, int n) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const int t = static_cast<int>(threadIdx.x);
  const int half = static_cast<int>(blockDim.x);
  T a = t < n ? in[t] : T(0);
  T b = t + half < n ? in[t + half] : T(0);
  T total;
  blelloch_block_scan<Kind, Padded>(a, b, reinterpret_cast<T*>(shared_bytes), &total);
  if (t < n) out[t] = a;
  if (t + half < n) out[t + half] = b;
}

template <bool Padded, typename T>
void launch_blelloch(const ScanArgs<T>& args, cudaStream_t stream) {
  const std::int64_t n = args.n;
  if (n == 0) return;
  CUDALAB_REQUIRE(n <= kBlellochMaxItems, "scan blelloch: one block scans at most " +
                                              std::to_string(kBlellochMaxItems) + " elements, got " +
                                              std::to_string(n));
  // The tree needs a power-of-two array; the elements past n are zeros.
  int size = 64;
  while (size < n) size *= 2;
  const int threads = size / 2;
  const std::size_t shared = blelloch_shared_bytes<T>(threads, Padded);
  if (args.kind == ScanKind::inclusive) {
    scan_blelloch_kernel<ScanKind::inclusive, Padded>
        <<<1, threads, shared, stream>>>(args.in, args.out, static_cast<int>(n));
  } else {
    scan_blelloch_kernel<ScanKind::exclusive, Padded>
        <<<1, threads, shared, stream>>>(args.in, args.out, static_cast<int>(n));
  }
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void blelloch(const ScanArgs<T>& args, cudaStream_t stream) {
  launch_blelloch<false>(args, stream);
}

template <typename T>
void blelloch_padded(const ScanArgs<T>& args, cudaStream_t stream) {
  launch_blelloch<true>(args, stream);
}

template void blelloch(const ScanArgs<std::int32_t>&, cudaStream_t);
template void blelloch(const ScanArgs<float>&, cudaStream_t);
template void blelloch_padded(const ScanArgs<std::int32_t>&, cudaStream_t);
template void blelloch_padded(const ScanArgs<float>&, cudaStream_t);

}  // namespace cudalab::scan_variants
