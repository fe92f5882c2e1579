// Rung `three_pass`: the unfused baseline, three kernels as a framework's separate ops would run them: the row
// maxima, then the row sums of exp(x - max), then y = exp(x - max) / sum; a block of 256 threads
// per row each time, one scalar element per thread per step, max and sum parked in the workspace
// between kernels. Fixes: nothing yet; it is numerically safe (max subtracted) and any width runs.
// Costs: x is read three times from memory (plus three launches), so its ceiling is 2/4 of the copy
// rate; 2- and 4-byte loads; a 256-thread block per row idles most threads on narrow rows.
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/row_reduce.cuh"
#include "core/workspace.hpp"
#include "cudalab/softmax.hpp"
#include "ops/softmax/softmax.cuh"
#include "ops/softmax/variants.hpp"

namespace cudalab::softmax_variants {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmax_row_max_kernel(const T* __restrict__ x, std::int64_t features, float* __restrict__ row_max) {
  __shared__ float scratch[kWarpSize];
  const float max = scalar_row_max(x + blockIdx.x * features, features, threadIdx.x, kThreads);
  const float row = block_all_reduce(max, -INFINITY, MaxOf{}, scratch);
  if (threadIdx.x == 0) row_max[blockIdx.x] = row;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmax_row_sum_kernel(const T* __restrict__ x, std::int64_t features, const float* __restrict__ row_max,
                           float* __restrict__ row_sum) {
  __shared__ float scratch[kWarpSize];
  const float sum = scalar_row_sum_exp(x + blockIdx.x * features, features, row_max[blockIdx.x], threadIdx.x, kThreads);
  const float row = block_sum<kThreads>(sum, scratch);  // thread 0's
  if (threadIdx.x == 0) row_sum[blockIdx.x] = row;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmax_normalize_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t features,
                             const float* __restrict__ row_max, const float* __restrict__ row_sum) {
  const std::int64_t offset = blockIdx.x * features;
  scalar_row_normalize(x + offset, y + offset, features, row_max[blockIdx.x], 1.0f / row_sum[blockIdx.x], threadIdx.x,
                       kThreads);
}

}  // namespace

std::size_t three_pass_workspace_bytes(std::int64_t rows) { return 2 * sizeof(float) * static_cast<std::size_t>(rows); }

template <typename T>
void three_pass(const SoftmaxArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  CUDALAB_REQUIRE(args.rows <= 0x7fffffff, "softmax three_pass: more than 2^31-1 rows (a block per row)");
  auto* row_max = static_cast<float*>(workspace_of(args, three_pass_workspace_bytes(args.rows), "softmax three_pass"));
  float* row_sum = row_max + args.rows;
  const auto blocks = static_cast<unsigned>(args.rows);
  softmax_row_max_kernel<<<blocks, kThreads, 0, stream>>>(args.x, args.features, row_max);
  CUDALAB_CHECK_LAUNCH();
  softmax_row_sum_kernel<<<blocks, kThreads, 0, stream>>>(args.x, args.features, row_max, row_sum);
  CUDALAB_CHECK_LAUNCH();
  softmax_normalize_kernel<<<blocks, kThreads, 0, stream>>>(args.x, args.y, args.features, row_max, row_sum);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, three_pass, SoftmaxArgs)

}  // namespace cudalab::softmax_variants
