#include "core/launch.cuh"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {
namespace {

constexpr int kBlockSize = 256;

// Fixed-size grid: block scheduling cost is paid once per resident block, not once per 256
// elements, and the same launch works for any n.
__global__ void vecadd_grid_stride_kernel(const float* a, const float* b, float* c, std::int64_t n) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) c[i] = a[i] + b[i];
}

}  // namespace

void grid_stride(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = resident_grid_size(vecadd_grid_stride_kernel, kBlockSize, n);
  vecadd_grid_stride_kernel<<<blocks, kBlockSize, 0, stream>>>(a, b, c, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::vecadd_variants
