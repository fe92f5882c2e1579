// Backward rung `fused`: one pass over x and dy (column_tiles.cuh, TilePass::fused). Blocks of 32 x 8
// threads take tiles of 128 rows by 32 16-byte column vectors in address order; each thread keeps
// its bias vector in registers, has 4 rows' x and dy vectors in flight, writes dx and adds its fp32
// dx values into one running sum per column; the block's 8 row lanes meet in shared memory and
// write one fp32 partial per column, and a second small kernel adds each column's partials in a
// fixed order and rounds dbias once. Fixes: rung `naive`'s second pass (the column sums ride along the dx
// pass, so x and dy are read once and dx is never read back) and its latency-bound column loop; dx
// moves in 16-byte accesses. Costs: the partials, 4 bytes per column per 128 rows written and read
// back (1% of the bf16 traffic, 0.5% of fp32's), and a second launch. Deterministic: the same inputs
// give the same bits. Rows that are not 16-byte aligned run the same kernels one element per lane
// (a warp then reads 64-128 contiguous bytes of a row).
#include "core/workspace.hpp"
#include "cudalab/activations.hpp"
#include "ops/bias_act/column_tiles.cuh"
#include "ops/bias_act/variants.hpp"

namespace cudalab::bias_act_variants {

std::size_t backward_workspace_bytes(std::int64_t rows, std::int64_t features) {
  return partials_bytes(rows, features);
}

template <typename T>
void fused_backward(const BiasActBackwardArgs<T>& args, cudaStream_t stream) {
  if (args.features == 0) return;
  auto* partials = static_cast<float*>(
      workspace_of(args, backward_workspace_bytes(args.rows, args.features), "bias_act_backward fused"));
  if (args.rows > 0) {
    with_activation<T>(args.activation, [&](auto activation) {
      launch_column_tiles<T, decltype(activation), TilePass::fused>(args.x, args.bias, args.dy, args.dx, partials,
                                                                    args.rows, args.features, stream);
    });
  }
  launch_sum_partials(partials, args.rows, args.features, args.dbias, stream);
}

CUDALAB_BIAS_ACT_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, fused_backward, BiasActBackwardArgs)

}  // namespace cudalab::bias_act_variants
