// Rung `wgmma_pingpong`: rung `wgmma` (wgmma_kernel.cuh) with FlashAttention-3's schedule between the
// two consumer warpgroups. Fixes: left alone, both warpgroups tend to reach their GEMMs and their
// softmax at the same time, so the tensor cores idle while both compute exponentials; two named
// barriers make them issue their GEMMs in turn, one warpgroup's softmax running under the other's
// GEMMs. Costs: a barrier wait and an arrival per key tile in each warpgroup, and a warpgroup that
// is ready early waits for its turn. Up to seq 2048 (4096 causal or at head_dim 64) the blocks
// are also persistent (FlashAttention-3's scheduler, in a static order): one an SM, each loading
// its next row block's Q and K while its consumers finish the last.
#include "ops/attention/wgmma_kernel.cuh"

namespace cudalab::attention_variants {

template <typename T>
void wgmma_pingpong(const AttentionArgs<T>& args, cudaStream_t stream) {
  launch_attention_wgmma<T, true>("attention wgmma_pingpong", args, stream);
}

template void wgmma_pingpong<__nv_bfloat16>(const AttentionArgs<__nv_bfloat16>&, cudaStream_t);
template void wgmma_pingpong<__half>(const AttentionArgs<__half>&, cudaStream_t);

}  // namespace cudalab::attention_variants
