// Rung 2: fused, 16-byte vectors, a resident grid striding over the tensor as one flat array
// (flat.cuh). Fixes: rung 1's 2- and 4-byte accesses (a warp now moves 512 bytes of x and of y per
// instruction) and its block-per-256-elements scheduling; GELU (tanh) in 13 instructions instead of
// 24 (activation.cuh). Every row length runs at full vector width: when rows are not 16-byte
// aligned the bias is gathered element by element (from L1) while x and y stay 16-byte vectors.
// Costs: a bias load per x vector (an L1 hit, but a second load instruction), and a resident grid
// whose blocks each stride across the whole tensor, so the blocks in flight are spread over it
// rather than advancing as one front (the reduce ladder measured a few percent for that, DRAM page
// locality: docs/reduce.md).
#include "ops/bias_act/flat.cuh"
#include "ops/bias_act/variants.hpp"

namespace cudalab::bias_act_variants {

template <typename T>
void vectorized(const BiasActArgs<T>& args, cudaStream_t stream) {
  with_activation(args.activation, [&](auto activation) {
    launch_flat<T, decltype(activation)>(args.x, args.bias, args.y, args.rows, args.features, stream);
  });
}

template void vectorized<float>(const BiasActArgs<float>&, cudaStream_t);
template void vectorized<__half>(const BiasActArgs<__half>&, cudaStream_t);
template void vectorized<__nv_bfloat16>(const BiasActArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::bias_act_variants
