#include "core/launch.cuh"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {
namespace {

constexpr int kBlockSize = 256;

__global__ void vecadd_one_per_thread_kernel(const float* a, const float* b, float* c, std::int64_t n) {
  const std::int64_t i = global_thread_index();
  if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

void one_per_thread(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::int64_t blocks = ceil_div<std::int64_t>(n, kBlockSize);
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "vecadd one_per_thread: n needs more than 2^31-1 blocks");
  vecadd_one_per_thread_kernel<<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(a, b, c, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::vecadd_variants
