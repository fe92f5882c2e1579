#include "cudalab/attention.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/arguments.hpp"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/variants.hpp"

namespace cudalab {
namespace {

namespace v = attention_variants;

// The fastest rung that runs the problem: the Hopper kernel (wgmma_pingpong) on sm_90a builds and
// compute capability 9.0; else the mma.sync kernel with overlapped copies (mma_pipelined, sm_80 and
// newer); elsewhere (fp32, other head dims, older GPUs) the CUDA-core FlashAttention-2 split (tiled).
template <typename T>
void forward(const T* q, const T* k, const T* v, T* o, float* lse, const AttentionDims& d,
             const AttentionOptions& options, cudaStream_t stream) {
  CUDALAB_REQUIRE(d.batch >= 0 && d.heads >= 0 && d.kv_heads >= 0 && d.seq >= 0 && d.head_dim >= 0,
                  "attention_forward: batch, heads, kv_heads, seq and head_dim must be >= 0");
  CUDALAB_REQUIRE(d.kv_heads > 0 ? d.heads % d.kv_heads == 0 : d.heads == 0,
                  "attention_forward: heads (" + std::to_string(d.heads) + ") must be a multiple of kv_heads (" +
                      std::to_string(d.kv_heads) + ")");
  CUDALAB_REQUIRE(std::isfinite(options.scale) && options.scale >= 0.0f,
                  "attention_forward: scale must be finite and >= 0 (0 means 1/sqrt(head_dim))");
  if (d.batch == 0 || d.heads == 0 || d.seq == 0 || d.head_dim == 0) return;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  CUDALAB_REQUIRE(
      d.batch <= kMax / d.heads && d.batch * d.heads <= kMax / d.seq && d.batch * d.heads * d.seq <= kMax / d.head_dim,
      "attention_forward: batch * heads * seq * head_dim overflows 64 bits");
  const std::int64_t rows = d.batch * d.heads * d.seq, q_count = rows * d.head_dim;
  const std::int64_t kv_count = d.batch * d.kv_heads * d.seq * d.head_dim;
  require_arrays("attention_forward",
                 {{q, q_count, sizeof(T), "q"}, {k, kv_count, sizeof(T), "k"}, {v, kv_count, sizeof(T), "v"}},
                 {{o, q_count, sizeof(T), "o"}, {lse, rows, sizeof(float), "lse"}});

  v::AttentionArgs<T> args;
  args.q = q;
  args.k = k;
  args.v = v;
  args.o = o;
  args.lse = lse;
  args.batch = d.batch;
  args.heads = d.heads;
  args.kv_heads = d.kv_heads;
  args.seq = d.seq;
  args.head_dim = d.head_dim;
  args.scale = options.scale > 0.0f ? options.scale : 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  args.causal = options.causal;
  if constexpr (sizeof(T) == 2) {
    const bool aligned = is_aligned16(q) && is_aligned16(k) && is_aligned16(v) && is_aligned16(o);
    const v::AttentionShape shape = v::shape_of(args, current_gpu().compute_capability);
    if (aligned && v::wgmma_limits(shape).empty()) return v::wgmma_pingpong(args, stream);
    if (aligned && v::mma_limits(shape).empty()) return v::mma_pipelined(args, stream);
  }
  const std::string why = v::tiled_limits(v::shape_of(args, current_gpu().compute_capability));
  CUDALAB_REQUIRE(why.empty(), "attention_forward: " + why);
  v::tiled(args, stream);
}

}  // namespace

void attention_forward(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o,
                       float* lse, const AttentionDims& dims, const AttentionOptions& options, cudaStream_t stream) {
  forward(q, k, v, o, lse, dims, options, stream);
}
void attention_forward(const __half* q, const __half* k, const __half* v, __half* o, float* lse,
                       const AttentionDims& dims, const AttentionOptions& options, cudaStream_t stream) {
  forward(q, k, v, o, lse, dims, options, stream);
}
void attention_forward(const float* q, const float* k, const float* v, float* o, float* lse, const AttentionDims& dims,
                       const AttentionOptions& options, cudaStream_t stream) {
  forward(q, k, v, o, lse, dims, options, stream);
}

}  // namespace cudalab
