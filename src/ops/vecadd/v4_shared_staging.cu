#include "core/launch.cuh"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {
namespace {

constexpr int kBlockSize = 256;

// The tutorial's "shared memory optimisation", with 64-bit indexing. Every value is read from
// global memory exactly once either way; staging adds a shared store, a barrier and a shared load
// per operand. It is on the ladder to measure claim C02, not because it should win.
template <typename T>
__global__ void vecadd_shared_staging_kernel(const T* a, const T* b, T* c, std::int64_t n) {
  __shared__ T staged_a[kBlockSize];
  __shared__ T staged_b[kBlockSize];
  const std::int64_t i = global_thread_index();
  if (i < n) {
    staged_a[threadIdx.x] = a[i];
    staged_b[threadIdx.x] = b[i];
  }
  __syncthreads();
  if (i < n) c[i] = staged_a[threadIdx.x] + staged_b[threadIdx.x];
}

}  // namespace

template <typename T>
void shared_staging(const VecaddArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  const std::int64_t blocks = ceil_div<std::int64_t>(args.n, kBlockSize);
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "vecadd shared_staging: n needs more than 2^31-1 blocks");
  vecadd_shared_staging_kernel<<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(args.a, args.b, args.c,
                                                                                         args.n);
  CUDALAB_CHECK_LAUNCH();
}

template void shared_staging<float>(const VecaddArgs<float>&, cudaStream_t);
template void shared_staging<__half>(const VecaddArgs<__half>&, cudaStream_t);
template void shared_staging<__nv_bfloat16>(const VecaddArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::vecadd_variants
