// Rung `warp_per_row`: one fused kernel, a warp per row, 8 rows per 256-thread block: the row max and the row sum
// of exp(x - max) by xor shuffles (no shared memory, no barrier), then y. Fixes: rung `three_pass`'s three
// launches, its workspace round trip and its 256 threads per row (narrow rows keep a warp busy, and
// 64 rows are in flight per SM). Costs: still three scalar passes over x (2- and 4-byte loads, 64 to
// 128 bytes per warp instruction); the second and third reads come from L1/L2 only while the row is
// still there, which holds for narrow rows and fails for wide ones; wide rows get one warp each.
#include <cstdint>

#include "core/launch.cuh"
#include "core/row_reduce.cuh"
#include "cudalab/softmax.hpp"
#include "ops/softmax/softmax.cuh"
#include "ops/softmax/variants.hpp"

namespace cudalab::softmax_variants {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / kWarpSize;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmax_warp_per_row_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t rows, std::int64_t features) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // the whole warp: its lanes share the row
  const int lane = threadIdx.x % kWarpSize;
  const T* x_row = x + row * features;
  const float max = group_reduce<kWarpSize>(scalar_row_max(x_row, features, lane, kWarpSize), MaxOf{});
  const float sum = warp_sum(scalar_row_sum_exp(x_row, features, max, lane, kWarpSize));
  scalar_row_normalize(x_row, y + row * features, features, max, 1.0f / sum, lane, kWarpSize);
}

}  // namespace

template <typename T>
void warp_per_row(const SoftmaxArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  const std::int64_t blocks = ceil_div<std::int64_t>(args.rows, kRowsPerBlock);
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "softmax warp_per_row: rows need more than 2^31-1 blocks");
  softmax_warp_per_row_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args.x, args.y, args.rows,
                                                                                      args.features);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, warp_per_row, SoftmaxArgs)

}  // namespace cudalab::softmax_variants
