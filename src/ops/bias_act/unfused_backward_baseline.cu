// Backward baseline: the passes PyTorch's separate ops make, dx = act_backward(dy, x + bias) into
// a tensor, then dbias = dx.sum(0) reading it back, here as the fused rung's own tile kernels
// (column_tiles.cuh) run as two passes: TilePass::dx_only writes dx, TilePass::sum_only reads dx
// and writes the column partials, which the same small kernel adds. So the comparison with the
// fused rung measures the fusion alone: 4 tensor transfers instead of 3, and a column sum of dx
// values already rounded to T (the check accepts a dbias that sums the dx a variant wrote:
// reference.hpp). Its second pass, column_sums, is also the library's bias_gradient.
#include "core/workspace.hpp"
#include "cudalab/activations.hpp"
#include "ops/bias_act/column_tiles.cuh"
#include "ops/bias_act/variants.hpp"

namespace cudalab::bias_act_variants {

template <typename T>
void column_sums(const T* m, T* out, std::int64_t rows, std::int64_t features, float* partials, cudaStream_t stream) {
  if (features == 0) return;
  if (rows > 0)
    launch_column_tiles<T, Identity, TilePass::sum_only>(nullptr, nullptr, m, nullptr, partials, rows, features,
                                                         stream);
  launch_sum_partials(partials, rows, features, out, stream);
}

template <typename T>
void unfused_backward(const BiasActBackwardArgs<T>& args, cudaStream_t stream) {
  if (args.features == 0) return;
  auto* partials = static_cast<float*>(
      workspace_of(args, backward_workspace_bytes(args.rows, args.features), "bias_act_backward unfused"));
  if (args.rows > 0) {
    with_activation<T>(args.activation, [&](auto activation) {
      launch_column_tiles<T, decltype(activation), TilePass::dx_only>(args.x, args.bias, args.dy, args.dx, nullptr,
                                                                      args.rows, args.features, stream);
    });
  }
  column_sums(args.dx, args.dbias, args.rows, args.features, partials, stream);
}

#define CUDALAB_COLUMN_SUMS_INSTANCE(T, a, b) \
  template void column_sums(const T*, T*, std::int64_t, std::int64_t, float*, cudaStream_t);
CUDALAB_BIAS_ACT_ELEMENTS(CUDALAB_COLUMN_SUMS_INSTANCE, , )
CUDALAB_BIAS_ACT_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, unfused_backward, BiasActBackwardArgs)

}  // namespace cudalab::bias_act_variants
