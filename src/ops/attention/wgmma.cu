// Rung `wgmma`: attention on Hopper's warpgroup tensor-core instructions (wgmma_kernel.cuh),
// sm_90a only. Fixes, relative to mma_pipelined: wgmma takes its B operands (K, V) and Q straight
// from shared memory, so no ldmatrix traffic and no fragment registers; TMA moves K and V tiles by a
// producer warpgroup into 2-slot rings that run ahead of the consumers, with mbarriers instead of
// block-wide barriers; each consumer warpgroup issues S = Q K^T of the next tile with P V of the
// previous one and runs the softmax while P V is in flight. Costs: a block needs 160 KiB of shared
// memory at head_dim 128 (one block per SM), sm_90a code, and TMA's 16-byte alignment.
#include <string>

#include "ops/attention/wgmma_kernel.cuh"

namespace cudalab::attention_variants {

std::string wgmma_limits(const AttentionShape& shape) {
#if CUDALAB_SM90A
  if (shape.compute_capability != 90)
    return "wgmma and TMA need compute capability 9.0 (Hopper); this GPU is " +
           std::to_string(shape.compute_capability / 10) + "." + std::to_string(shape.compute_capability % 10);
  if (shape.element_size != 2) return "tensor-core rungs take bf16 or f16 inputs";
  if (shape.head_dim % 8 != 0 || shape.head_dim > 256)
    return "head_dim " + std::to_string(shape.head_dim) +
           ": the kernel takes multiples of 8 up to 256 (on its head_dim 64, 128 and 256 builds)";
  if (shape.heads > 65535 || shape.batch > 65535) return "heads and batch above 65535 (grid y and z)";
  // TMA coordinates are 32-bit: a (batch, head) is a matrix index, a key or query row a row index.
  if (shape.batch * shape.heads > 0x7fffffffLL || shape.seq > 0x7fffffffLL - 256)
    return "batch * heads and seq must stay below 2^31 (TMA coordinates are 32-bit)";
  return "";
#else
  (void)shape;
  return hopper::kNotBuilt;
#endif
}

template <typename T>
void wgmma(const AttentionArgs<T>& args, cudaStream_t stream) {
  launch_attention_wgmma<T, false>("attention wgmma", args, stream);
}

template void wgmma<__nv_bfloat16>(const AttentionArgs<__nv_bfloat16>&, cudaStream_t);
template void wgmma<__half>(const AttentionArgs<__half>&, cudaStream_t);

}  // namespace cudalab::attention_variants
