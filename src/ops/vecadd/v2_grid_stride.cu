#include "core/launch.cuh"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {
namespace {

constexpr int kBlockSize = 256;

// Fixed-size grid: block scheduling cost is paid once per resident block, not once per 256
// elements, and the same launch works for any n.
template <typename T>
__global__ void vecadd_grid_stride_kernel(const T* a, const T* b, T* c, std::int64_t n) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) c[i] = a[i] + b[i];
}

}  // namespace

template <typename T>
void grid_stride(const VecaddArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  const int blocks = resident_grid_size(vecadd_grid_stride_kernel<T>, kBlockSize, args.n);
  vecadd_grid_stride_kernel<<<blocks, kBlockSize, 0, stream>>>(args.a, args.b, args.c, args.n);
  CUDALAB_CHECK_LAUNCH();
}

template void grid_stride<float>(const VecaddArgs<float>&, cudaStream_t);
template void grid_stride<__half>(const VecaddArgs<__half>&, cudaStream_t);
template void grid_stride<__nv_bfloat16>(const VecaddArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::vecadd_variants
