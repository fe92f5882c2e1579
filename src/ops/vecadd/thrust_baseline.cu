#include <thrust/execution_policy.h>
#include <thrust/transform.h>
#include <cuda/std/functional>

#include "cudalab/error.hpp"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {

template <typename T>
void thrust_transform(const VecaddArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  // par_nosync: no stream synchronization inside the call, so the timer measures the kernel.
  thrust::transform(thrust::cuda::par_nosync.on(stream), args.a, args.a + args.n, args.b, args.c, cuda::std::plus<T>{});
  CUDALAB_CHECK_LAUNCH();
}

template void thrust_transform<float>(const VecaddArgs<float>&, cudaStream_t);
template void thrust_transform<__half>(const VecaddArgs<__half>&, cudaStream_t);
template void thrust_transform<__nv_bfloat16>(const VecaddArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::vecadd_variants
