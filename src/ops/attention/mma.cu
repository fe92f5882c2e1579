// Rung `mma`: attention on tensor cores (mma_kernel.cuh). Fixes the CUDA-core rungs' arithmetic
// rate: Q K^T and P V run as mma.sync m16n8k16 (fp32 accumulators) from ldmatrix'd fragments, P
// stays in registers, exponents are exp2 with the scale folded in. Costs: no overlap of the K/V
// copies with arithmetic (each tile is waited for before any mma), and causal tiles above the
// diagonal are computed and then masked, so causal attention does the full work.
#include <string>

#include "ops/attention/mma_kernel.cuh"

namespace cudalab::attention_variants {

std::string mma_limits(const AttentionShape& shape) {
  if (shape.compute_capability < 80)
    return "needs compute capability 8.0 or newer (mma.sync with bf16, cp.async); this GPU is " +
           std::to_string(shape.compute_capability / 10) + "." + std::to_string(shape.compute_capability % 10);
  if (shape.element_size != 2) return "tensor-core rungs take bf16 or f16 inputs";
  if (shape.head_dim != 64 && shape.head_dim != 128)
    return "head_dim " + std::to_string(shape.head_dim) + ": the kernel is built for head_dim 64 and 128";
  if (shape.heads > 65535 || shape.batch > 65535) return "heads and batch above 65535 (grid y and z)";
  if (ceil_div<std::int64_t>(shape.seq, MmaNarrowConfig::kBlockM) > 0x7fffffffLL)
    return "seq too long for the grid's x dimension";
  return "";
}

template <typename T>
void mma(const AttentionArgs<T>& args, cudaStream_t stream) {
  launch_attention_mma<T, false>("attention mma", args, stream);
}

template void mma<__nv_bfloat16>(const AttentionArgs<__nv_bfloat16>&, cudaStream_t);
template void mma<__half>(const AttentionArgs<__half>&, cudaStream_t);

}  // namespace cudalab::attention_variants
