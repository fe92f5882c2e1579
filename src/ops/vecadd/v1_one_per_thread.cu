#include "core/launch.cuh"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {
namespace {

constexpr int kBlockSize = 256;

template <typename T>
__global__ void vecadd_one_per_thread_kernel(const T* a, const T* b, T* c, std::int64_t n) {
  const std::int64_t i = global_thread_index();
  if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

template <typename T>
void one_per_thread(const VecaddArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  const std::int64_t blocks = ceil_div<std::int64_t>(args.n, kBlockSize);
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "vecadd one_per_thread: n needs more than 2^31-1 blocks");
  vecadd_one_per_thread_kernel<<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(args.a, args.b, args.c,
                                                                                         args.n);
  CUDALAB_CHECK_LAUNCH();
}

template void one_per_thread<float>(const VecaddArgs<float>&, cudaStream_t);
template void one_per_thread<__half>(const VecaddArgs<__half>&, cudaStream_t);
template void one_per_thread<__nv_bfloat16>(const VecaddArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::vecadd_variants
