// Backward rung `naive`: the obvious two kernels. dx one element per thread (a block of 256 per 256
// elements, 2- or 4-byte accesses, a 64-bit modulo for the column); then dbias by one thread per
// column, looping down its column of dx: a warp reads 32 adjacent columns of one row per step, so
// the reads coalesce, but only `features` threads run (8192 for 8192 features, 3% of the 270,336
// the H100 keeps resident), each with 8 loads of 2-4 bytes in flight: 0.1-0.25 MiB in flight where
// HBM needs ~2-3 MiB (Little's law: ~3 TB/s x ~0.8 us), so the column pass, not dx, sets the time.
// It sums dx as written, rounded to T, as a separate dx.sum(0) does. The running sum is split over
// 8 interleaved accumulators: one fp32 sum of a few hundred equal fp32 terms drifts by ~rows/4 ulps
// of the total (the rounding repeats), past the tree-order bound an fp32 column sum is held to;
// 8 accumulators and a pairwise finish stay inside it.
#include <cstdint>

#include "core/launch.cuh"
#include "cudalab/activations.hpp"
#include "cudalab/error.hpp"
#include "ops/bias_act/activation.cuh"
#include "ops/bias_act/variants.hpp"

namespace cudalab::bias_act_variants {
namespace {

constexpr int kBlockSize = 256;
constexpr int kAccumulators = 8;

template <typename T, typename Act>
__global__ void bias_act_backward_naive_dx_kernel(const T* __restrict__ x, const T* __restrict__ bias,
                                                  const T* __restrict__ dy, T* __restrict__ dx, std::int64_t elements,
                                                  std::int64_t features) {
  const std::int64_t i = global_thread_index();
  if (i >= elements) return;
  const float v = to_float(x[i]) + to_float(bias[i % features]);
  dx[i] = from_float<T>(to_float(dy[i]) * Act::derivative(v));
}

template <typename T>
__global__ void bias_act_backward_naive_dbias_kernel(const T* __restrict__ dx, T* __restrict__ dbias, std::int64_t rows,
                                                     std::int64_t features) {
  const std::int64_t column = global_thread_index();
  if (column >= features) return;
  float sum[kAccumulators] = {};
  for (std::int64_t first = 0; first < rows; first += kAccumulators) {
#pragma unroll
    for (int k = 0; k < kAccumulators; ++k)
      if (first + k < rows) sum[k] += to_float(dx[(first + k) * features + column]);
  }
  dbias[column] = from_float<T>(((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7])));
}

}  // namespace

template <typename T>
void naive_backward(const BiasActBackwardArgs<T>& args, cudaStream_t stream) {
  if (args.features == 0) return;
  const std::int64_t elements = args.rows * args.features;
  if (elements > 0) {
    const std::int64_t blocks = ceil_div<std::int64_t>(elements, kBlockSize);
    CUDALAB_REQUIRE(blocks <= 0x7fffffff, "bias_act_backward naive: rows * features needs more than 2^31-1 blocks");
    with_activation<T>(args.activation, [&](auto activation) {
      bias_act_backward_naive_dx_kernel<T, decltype(activation)>
          <<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(args.x, args.bias, args.dy, args.dx, elements,
                                                                     args.features);
    });
    CUDALAB_CHECK_LAUNCH();
  }
  const auto blocks = static_cast<unsigned>(ceil_div<std::int64_t>(args.features, kBlockSize));
  bias_act_backward_naive_dbias_kernel<T>
      <<<blocks, kBlockSize, 0, stream>>>(args.dx, args.dbias, args.rows, args.features);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_BIAS_ACT_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, naive_backward, BiasActBackwardArgs)

}  // namespace cudalab::bias_act_variants
