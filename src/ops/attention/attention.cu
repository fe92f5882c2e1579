#include "cudalab/attention.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "core/arguments.hpp"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/attention/variants.hpp"

namespace cudalab {
namespace {

namespace v = attention_variants;

constexpr char kForward[] = "attention_forward";
constexpr char kBackward[] = "attention_backward";
constexpr char kBackwardWorkspace[] = "attention_backward_workspace_bytes";

// The sizes every attention call refuses: negative ones, heads not a multiple of kv_heads, and
// (where none is 0) batch * heads * seq * head_dim past 64 bits. False when a size is 0: there is
// nothing to compute.
bool require_dims(const char* call, const AttentionDims& d) {
  const std::string prefix = std::string(call) + ": ";
  CUDALAB_REQUIRE(d.batch >= 0 && d.heads >= 0 && d.kv_heads >= 0 && d.seq >= 0 && d.head_dim >= 0,
                  prefix + "batch, heads, kv_heads, seq and head_dim must be >= 0");
  CUDALAB_REQUIRE(d.kv_heads > 0 ? d.heads % d.kv_heads == 0 : d.heads == 0,
                  prefix + "heads (" + std::to_string(d.heads) + ") must be a multiple of kv_heads (" +
                      std::to_string(d.kv_heads) + ")");
  return checked_product(call, "batch * heads * seq * head_dim", {d.batch, d.heads, d.seq, d.head_dim}) > 0;
}

void require_scale(const char* call, const AttentionOptions& options) {
  CUDALAB_REQUIRE(std::isfinite(options.scale) && options.scale >= 0.0f,
                  std::string(call) + ": scale must be finite and >= 0 (0 means 1/sqrt(head_dim))");
}

// The problem's part of the forward's AttentionArgs or the backward's AttentionBackwardArgs.
template <typename Args>
void set_problem(Args& args, const AttentionDims& d, const AttentionOptions& options) {
  args.batch = d.batch;
  args.heads = d.heads;
  args.kv_heads = d.kv_heads;
  args.seq = d.seq;
  args.head_dim = d.head_dim;
  args.scale = options.scale > 0.0f ? options.scale : 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  args.causal = options.causal;
}

v::AttentionShape shape_of(const AttentionDims& d, std::size_t element_size) {
  return {d.batch, d.heads, d.kv_heads, d.seq, d.head_dim, element_size, current_gpu().compute_capability};
}

// The fastest rung that runs the problem: the Hopper kernel (wgmma_pingpong) on sm_90a builds and
// compute capability 9.0; else the mma.sync kernel with overlapped copies (mma_pipelined, sm_80 and
// newer); elsewhere (fp32, other head dims, older GPUs) the CUDA-core FlashAttention-2 split (tiled).
template <typename T>
void forward(const T* q, const T* k, const T* v, T* o, float* lse, const AttentionDims& d,
             const AttentionOptions& options, cudaStream_t stream) {
  const bool work = require_dims(kForward, d);
  require_scale(kForward, options);
  if (!work) return;
  const std::int64_t rows = d.batch * d.heads * d.seq, q_count = rows * d.head_dim;
  const std::int64_t kv_count = d.batch * d.kv_heads * d.seq * d.head_dim;
  require_arrays(kForward, {{q, q_count, sizeof(T), "q"}, {k, kv_count, sizeof(T), "k"}, {v, kv_count, sizeof(T), "v"}},
                 {{o, q_count, sizeof(T), "o"}, {lse, rows, sizeof(float), "lse"}});

  v::AttentionArgs<T> args;
  args.q = q;
  args.k = k;
  args.v = v;
  args.o = o;
  args.lse = lse;
  set_problem(args, d, options);
  const v::AttentionShape shape = shape_of(d, sizeof(T));
  if constexpr (sizeof(T) == 2) {
    const bool aligned = is_aligned16(q) && is_aligned16(k) && is_aligned16(v) && is_aligned16(o);
    if (aligned && v::wgmma_limits(shape).empty()) return v::wgmma_pingpong(args, stream);
    if (aligned && v::mma_limits(shape).empty()) return v::mma_pipelined(args, stream);
  }
  const std::string why = v::tiled_limits(shape);
  CUDALAB_REQUIRE(why.empty(), std::string(kForward) + ": " + why);
  v::tiled(args, stream);
}

// The backward's kernel and the scratch it takes, for a problem require_dims passed with work to
// do. Where every array is 16-byte aligned: wgmma_backward on sm_90a builds and compute capability
// 9.0, else mma_backward (sm_80 and newer); both are FlashAttention-2's backward on tensor cores
// with the same O(seq) scratch, at 426 and 125 TFLOP/s against naive_backward's 0.97 at 4 x 16 x
// 4096 x 128 bf16 (H100, docs/attention.md). Elsewhere naive_backward, the one other library rung,
// which takes any dtype and head_dim at the price of P and dS materialized (O(seq^2) scratch).
// Throws, naming `call`, when none runs the shape.
enum class BackwardKernel { wgmma, mma, naive };
struct BackwardPlan {
  BackwardKernel kernel = BackwardKernel::naive;
  std::size_t workspace_bytes = 0;
};

BackwardPlan plan_backward(const char* call, const AttentionDims& d, std::size_t element_size, bool aligned) {
  const v::AttentionShape shape = shape_of(d, element_size);
  const bool hopper = aligned && v::wgmma_backward_limits(shape).empty();
  if (hopper || (aligned && v::mma_backward_limits(shape).empty())) {
    // head_dim is 64 or 128 here: head_dim + 1 cannot overflow.
    CUDALAB_REQUIRE(
        d.batch * d.heads * d.seq <= std::numeric_limits<std::int64_t>::max() / 4 / (d.head_dim + 1),
        std::string(call) + ": the workspace, batch * heads * seq * (head_dim + 1) floats, overflows 64 bits");
    return {hopper ? BackwardKernel::wgmma : BackwardKernel::mma,
            v::mma_backward_workspace_bytes(d.batch, d.heads, d.seq, d.head_dim)};
  }
  const std::string why = v::naive_backward_limits(shape);
  CUDALAB_REQUIRE(why.empty(), std::string(call) + ": " + why);
  return {BackwardKernel::naive, v::naive_backward_workspace_bytes(d.batch, d.heads, d.seq)};
}

// Both attention_backward overloads: `scratch` is the stream-ordered allocator or the caller's buffer.
template <typename T>
void backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o, T* dq, T* dk, T* dv,
              const AttentionDims& d, const AttentionOptions& options, Workspace& scratch, cudaStream_t stream) {
  const bool work = require_dims(kBackward, d);
  require_scale(kBackward, options);
  if (!work) return;
  const std::int64_t rows = d.batch * d.heads * d.seq, q_count = rows * d.head_dim;
  const std::int64_t kv_count = d.batch * d.kv_heads * d.seq * d.head_dim;
  require_arrays(kBackward,
                 {{q, q_count, sizeof(T), "q"},
                  {k, kv_count, sizeof(T), "k"},
                  {v, kv_count, sizeof(T), "v"},
                  {o, q_count, sizeof(T), "o"},
                  {d_o, q_count, sizeof(T), "d_o"},
                  {lse, rows, sizeof(float), "lse"}},
                 {{dq, q_count, sizeof(T), "dq"}, {dk, kv_count, sizeof(T), "dk"}, {dv, kv_count, sizeof(T), "dv"}});
  const bool aligned = is_aligned16(q) && is_aligned16(k) && is_aligned16(v) && is_aligned16(o) && is_aligned16(d_o) &&
                       is_aligned16(dq) && is_aligned16(dk) && is_aligned16(dv);
  const BackwardPlan plan = plan_backward(kBackward, d, sizeof(T), aligned);

  v::AttentionBackwardArgs<T> args;
  args.q = q;
  args.k = k;
  args.v = v;
  args.o = o;
  args.d_o = d_o;
  args.lse = lse;
  args.dq = dq;
  args.dk = dk;
  args.dv = dv;
  set_problem(args, d, options);
  args.workspace_bytes = plan.workspace_bytes;
  args.workspace = scratch.reserve(plan.workspace_bytes);  // every plan needs some: never null here
  CUDALAB_REQUIRE(is_aligned16(args.workspace), std::string(kBackward) + ": workspace must be 16-byte aligned");
  if constexpr (sizeof(T) == 2) {
    if (plan.kernel == BackwardKernel::wgmma) return v::wgmma_backward(args, stream);
    if (plan.kernel == BackwardKernel::mma) return v::mma_backward(args, stream);
  }
  v::naive_backward(args, stream);
}

template <typename T>
void backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o, T* dq, T* dk, T* dv,
              const AttentionDims& d, const AttentionOptions& options, cudaStream_t stream) {
  // Handed back on the stream when the call ends, also when a launch throws.
  StreamOrderedWorkspace scratch(stream);
  backward(q, k, v, o, lse, d_o, dq, dk, dv, d, options, scratch, stream);
}

template <typename T>
void backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o, T* dq, T* dk, T* dv,
              const AttentionDims& d, const AttentionOptions& options, void* workspace, std::size_t workspace_bytes,
              cudaStream_t stream) {
  CallerWorkspace scratch(workspace, workspace_bytes, kBackward, kBackwardWorkspace);
  backward(q, k, v, o, lse, d_o, dq, dk, dv, d, options, scratch, stream);
}

}  // namespace

template <typename T, typename>
void attention_forward(const T* q, const T* k, const T* v, T* o, float* lse, const AttentionDims& dims,
                       const AttentionOptions& options, cudaStream_t stream) {
  forward(q, k, v, o, lse, dims, options, stream);
}

std::size_t attention_backward_workspace_bytes(const AttentionDims& dims, DType dtype, bool aligned) {
  CUDALAB_REQUIRE(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
                  std::string(kBackwardWorkspace) + ": dtype must be f32, bf16 or f16, got " + to_string(dtype));
  if (!require_dims(kBackwardWorkspace, dims)) return 0;
  return plan_backward(kBackwardWorkspace, dims, size_of(dtype), aligned).workspace_bytes;
}

template <typename T, typename>
void attention_backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o, T* dq, T* dk,
                        T* dv, const AttentionDims& dims, const AttentionOptions& options, cudaStream_t stream) {
  backward(q, k, v, o, lse, d_o, dq, dk, dv, dims, options, stream);
}

template <typename T, typename>
void attention_backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o, T* dq, T* dk,
                        T* dv, const AttentionDims& dims, const AttentionOptions& options, void* workspace,
                        std::size_t workspace_bytes, cudaStream_t stream) {
  backward(q, k, v, o, lse, d_o, dq, dk, dv, dims, options, workspace, workspace_bytes, stream);
}

#define CUDALAB_ATTENTION_ENTRIES(T, a, b)                                                                     \
  template void attention_forward(const T*, const T*, const T*, T*, float*, const AttentionDims&,              \
                                  const AttentionOptions&, cudaStream_t);                                      \
  template void attention_backward(const T*, const T*, const T*, const T*, const float*, const T*, T*, T*, T*, \
                                   const AttentionDims&, const AttentionOptions&, cudaStream_t);               \
  template void attention_backward(const T*, const T*, const T*, const T*, const float*, const T*, T*, T*, T*, \
                                   const AttentionDims&, const AttentionOptions&, void*, std::size_t, cudaStream_t);
CUDALAB_ATTENTION_ELEMENTS(CUDALAB_ATTENTION_ENTRIES, , )

}  // namespace cudalab
