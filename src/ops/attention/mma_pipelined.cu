// Rung `mma_pipelined`: rung `mma`'s kernel (mma_kernel.cuh) with the copies overlapped and causal
// work skipped. Fixes: V's tile is copied by cp.async while S = Q K^T and the softmax run, the next
// K tile while P V runs, so each copy hides behind arithmetic; causal key tiles wholly above the
// block's last query row are never loaded or computed (about half the work), and in the diagonal
// tile a warp whose 16 rows all precede the tile skips it. Costs: two barriers per key tile instead
// of one, and one K and one V buffer only (a deeper pipeline would need more shared memory).
#include "ops/attention/mma_kernel.cuh"

namespace cudalab::attention_variants {

template <typename T>
void mma_pipelined(const AttentionArgs<T>& args, cudaStream_t stream) {
  launch_attention_mma<T, true>("attention mma_pipelined", args, stream);
}

template void mma_pipelined<__nv_bfloat16>(const AttentionArgs<__nv_bfloat16>&, cudaStream_t);
template void mma_pipelined<__half>(const AttentionArgs<__half>&, cudaStream_t);

}  // namespace cudalab::attention_variants
