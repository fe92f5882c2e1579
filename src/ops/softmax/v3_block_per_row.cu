// Rung `block_per_row`: one fused kernel, a block of 256 threads per row, the max and the sum reduced across the
// block (warp shuffles, then one value per warp through shared memory). Fixes: rung `warp_per_row`'s one warp on
// a wide row (8192 features is 256 loads per lane there, 32 here, and a row's loads come from 8
// warps at once). Costs: still three scalar passes over x, the re-reads from L1/L2 at best; four
// barriers per row; narrow rows leave most of the block idle.
#include <cstdint>

#include "core/launch.cuh"
#include "cudalab/softmax.hpp"
#include "ops/softmax/softmax.cuh"
#include "ops/softmax/variants.hpp"

namespace cudalab::softmax_variants {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmax_block_per_row_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t features) {
  __shared__ float scratch[kWarpSize];
  const BlockReduce reduce{scratch};
  const std::int64_t offset = blockIdx.x * features;
  const float max = reduce.max(scalar_row_max(x + offset, features, threadIdx.x, kThreads));
  const float sum = reduce.sum(scalar_row_sum_exp(x + offset, features, max, threadIdx.x, kThreads));
  scalar_row_normalize(x + offset, y + offset, features, max, 1.0f / sum, threadIdx.x, kThreads);
}

}  // namespace

template <typename T>
void block_per_row(const SoftmaxArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  CUDALAB_REQUIRE(args.rows <= 0x7fffffff, "softmax block_per_row: more than 2^31-1 rows (a block per row)");
  softmax_block_per_row_kernel<<<static_cast<unsigned>(args.rows), kThreads, 0, stream>>>(args.x, args.y,
                                                                                          args.features);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, block_per_row, SoftmaxArgs)

}  // namespace cudalab::softmax_variants
