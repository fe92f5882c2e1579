#include "core/launch.cuh"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {
namespace {

constexpr int kBlockSize = 256;

// Seed 003's "shared memory optimisation", with 64-bit indexing. Every value is read from global
// memory exactly once either way; staging adds a shared store, a barrier and a shared load per
// operand. It is on the ladder to measure claim C02, not because it should win.
__global__ void vecadd_shared_staging_kernel(const float* a, const float* b, float* c, std::int64_t n) {
  extern __shared__ float staged[];
  float* staged_a = staged;
  float* staged_b = staged + blockDim.x;
  const std::int64_t i = global_thread_index();
  if (i < n) {
    staged_a[threadIdx.x] = a[i];
    staged_b[threadIdx.x] = b[i];
  }
  __syncthreads();
  if (i < n) c[i] = staged_a[threadIdx.x] + staged_b[threadIdx.x];
}

}  // namespace

void shared_staging(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::int64_t blocks = ceil_div<std::int64_t>(n, kBlockSize);
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "vecadd shared_staging: n needs more than 2^31-1 blocks");
  const std::size_t shared_bytes = 2 * kBlockSize * sizeof(float);
  vecadd_shared_staging_kernel<<<static_cast<unsigned>(blocks), kBlockSize, shared_bytes, stream>>>(a, b, c, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::vecadd_variants
