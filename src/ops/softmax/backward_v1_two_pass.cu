// Backward rung `two_pass`: one block of 256 threads per row, two scalar passes: the first reduces the dot
// product sum_j(y_j dy_j) across the block, the second reads y and dy again and writes
// dx = y * (dy - dot). Fixes: nothing yet; it is the straightforward kernel (one launch, no
// workspace), any width. Costs: y and dy are read twice (the second time from L1/L2 while the row
// is still there, else from memory: 5 of the minimum's 3 units of traffic); 2- and 4-byte loads; a
// 256-thread block idles on narrow rows.
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
    softmax_backward_two_pass_kernel(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                                     std::int64_t features) {
  __shared__ float scratch[kWarpSize];
  const std::int64_t offset = blockIdx.x * features;
  const T* y_row = y + offset;
  const T* dy_row = dy + offset;
  float dot = 0.0f;
  for (std::int64_t j = threadIdx.x; j < features; j += kThreads)
    dot = fmaf(to_float(y_row[j]), to_float(dy_row[j]), dot);
  dot = BlockReduce{scratch}.sum(dot);
  T* dx_row = dx + offset;
  for (std::int64_t j = threadIdx.x; j < features; j += kThreads)
    dx_row[j] = from_float<T>(to_float(y_row[j]) * (to_float(dy_row[j]) - dot));
}

}  // namespace

template <typename T>
void backward_two_pass(const SoftmaxBackwardArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  CUDALAB_REQUIRE(args.rows <= 0x7fffffff, "softmax_backward two_pass: more than 2^31-1 rows (a block per row)");
  softmax_backward_two_pass_kernel<<<static_cast<unsigned>(args.rows), kThreads, 0, stream>>>(args.y, args.dy, args.dx,
                                                                                              args.features);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_two_pass, SoftmaxBackwardArgs)

}  // namespace cudalab::softmax_variants
