#include <thrust/execution_policy.h>
#include <thrust/transform.h>
#include <cuda/std/functional>

#include "cudalab/error.hpp"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {

void thrust_transform(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  // par_nosync: no stream synchronization inside the call, so the timer measures the kernel.
  thrust::transform(thrust::cuda::par_nosync.on(stream), a, a + n, b, c, cuda::std::plus<float>{});
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::vecadd_variants
