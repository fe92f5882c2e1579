// Rung `vectorized`: fused, 16-byte vectors over the tensor as one flat array (flat.cuh). Fixes: rung `tutorial`'s
// 2- and 4-byte accesses (a warp now moves 512 bytes of x and of y per instruction) and its
// one-element-per-thread blocks (a block now takes 16 KiB of bf16 x, four vectors a thread, all
// loaded before the first is used); GELU (tanh) in 13 instructions instead of 24 (activation.cuh).
// Every row length runs at full vector width: when rows are not 16-byte aligned the bias is
// gathered element by element (from L1) while x and y stay 16-byte vectors. Costs: a bias load per
// x vector (an L1 hit, but a second load instruction) and a 64-bit division per thread for its
// first column.
#include "cudalab/activations.hpp"
#include "ops/bias_act/flat.cuh"
#include "ops/bias_act/variants.hpp"

namespace cudalab::bias_act_variants {

template <typename T>
void vectorized(const BiasActArgs<T>& args, cudaStream_t stream) {
  with_activation<T>(args.activation, [&](auto activation) {
    launch_flat<T, decltype(activation)>(args.x, args.bias, args.y, args.rows, args.features, stream);
  });
}

CUDALAB_BIAS_ACT_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, vectorized, BiasActArgs)

}  // namespace cudalab::bias_act_variants
