#include "cudalab/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <string>
#include <utility>

#include "core/arguments.hpp"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/attention/layout.cuh"
#include "ops/attention/variants.hpp"

namespace cudalab {
namespace {

namespace v = attention_variants;

constexpr char kForward[] = "attention_forward";
constexpr char kBackward[] = "attention_backward";
constexpr char kBackwardWorkspace[] = "attention_backward_workspace_bytes";
constexpr char kForwardVarlen[] = "attention_forward_varlen";
constexpr char kBackwardVarlen[] = "attention_backward_varlen";
constexpr char kBackwardVarlenWorkspace[] = "attention_backward_varlen_workspace_bytes";
constexpr char kDecode[] = "attention_decode";
constexpr char kDecodePaged[] = "attention_decode_paged";
constexpr char kDecodeWorkspace[] = "attention_decode_workspace_bytes";

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
  CUDALAB_REQUIRE(options.window_left >= -1 && options.window_right >= -1,
                  std::string(call) + ": window_left and window_right must be >= 0, or -1 (unbounded); got " +
                      std::to_string(options.window_left) + " and " + std::to_string(options.window_right));
}

// One array of a call as its checks see it: name, pointer, strides and heads (kv_heads for k, v,
// dk and dv).
struct Array {
  const char* name;
  const void* data;
  AttentionStrides strides;
  std::int64_t heads;
};

// The elements from an array's first to past its last, its strides checked first (none negative,
// the span within 64 bits).
std::int64_t span_of(const char* call, const Array& a, const AttentionDims& d) {
  const AttentionStrides& s = a.strides;
  if (v::is_dense(s)) return d.batch * a.heads * d.seq * d.head_dim;  // require_dims checked the product
  CUDALAB_REQUIRE(s.batch >= 0 && s.head >= 0 && s.row >= 0,
                  std::string(call) + ": " + a.name + "'s strides must be >= 0");
  std::int64_t span = d.head_dim;
  for (const auto& [stride, count] : {std::pair{s.batch, d.batch}, {s.head, a.heads}, {s.row, d.seq}}) {
    CUDALAB_REQUIRE(count <= 1 || stride <= (std::numeric_limits<std::int64_t>::max() - span) / (count - 1),
                    std::string(call) + ": " + a.name + "'s strides reach past 64 bits");
    span += stride * (count - 1);
  }
  return span;
}

ArraySpan span_array(const char* call, const Array& a, const AttentionDims& d, std::size_t element_size) {
  return {a.data, span_of(call, a, d), element_size, a.name};
}

// Whether the rows of [batch, heads, seq, head_dim] at `s` lie apart: taken from the smallest
// stride up, each at least the extent of the dimensions below it.
bool rows_apart(const AttentionStrides& s, std::int64_t batch, std::int64_t heads, std::int64_t seq,
                std::int64_t head_dim) {
  std::pair<std::int64_t, std::int64_t> dims[3] = {{s.row, seq}, {s.head, heads}, {s.batch, batch}};
  std::sort(std::begin(dims), std::end(dims));
  std::int64_t extent = head_dim;
  for (const auto& [stride, count] : dims) {
    if (count <= 1) continue;
    if (stride < extent) return false;
    extent += stride * (count - 1);
  }
  return true;
}

// An output's own rows must lie apart (a dense one's do).
void require_rows_apart(const char* call, const Array& out, const AttentionDims& d) {
  CUDALAB_REQUIRE(v::is_dense(out.strides) || rows_apart(out.strides, d.batch, out.heads, d.seq, d.head_dim),
                  std::string(call) + ": " + out.name + "'s strides put rows on one another");
}

// Two outputs share no element: their spans apart, or the same strides with one's heads after the
// other's in a single layout whose rows lie apart (dQ, dK and dV in one packed array).
void require_outputs_apart(const char* call, const Array& a, const Array& b, const AttentionDims& d,
                           std::size_t element_size) {
  const ArraySpan x = span_array(call, a, d, element_size), y = span_array(call, b, d, element_size);
  if (x.end() <= y.begin() || y.end() <= x.begin()) return;
  const AttentionStrides &s = a.strides, &t = b.strides;
  bool apart = false;
  if (!v::is_dense(s) && s.batch == t.batch && s.head == t.head && s.row == t.row && s.head > 0) {
    const Array& first = x.begin() <= y.begin() ? a : b;
    const Array& second = x.begin() <= y.begin() ? b : a;
    const std::uintptr_t bytes = (x.begin() <= y.begin() ? y.begin() - x.begin() : x.begin() - y.begin());
    const std::uintptr_t head_bytes = static_cast<std::uintptr_t>(s.head) * element_size;
    const auto offset_heads = static_cast<std::int64_t>(bytes / head_bytes);
    apart = bytes % head_bytes == 0 && offset_heads >= first.heads &&
            rows_apart(s, d.batch, offset_heads + second.heads, d.seq, d.head_dim);
  }
  CUDALAB_REQUIRE(apart, std::string(call) + ": " + a.name + " must not overlap " + b.name);
}

// Whether the Hopper kernels read and write the arrays where they lie: strides (where given) all
// positive multiples of 8 elements (TMA's 16 bytes) below 2^39.
bool tma_strides(std::initializer_list<AttentionStrides> layout) {
  for (const AttentionStrides& s : layout) {
    if (v::is_dense(s)) continue;
    for (const std::int64_t stride : {s.batch, s.head, s.row})
      if (stride <= 0 || stride % 8 != 0 || stride >= (std::int64_t{1} << 39)) return false;
  }
  return true;
}

// Copies [batch, heads, seq, head_dim] rows from one layout to another, a warp per row; zeroes them
// where `from` is null.
template <typename T>
__global__ void __launch_bounds__(256)
    copy_rows_kernel(const T* __restrict__ from, AttentionStrides from_strides, T* __restrict__ to,
                     AttentionStrides to_strides, std::int64_t rows, std::int64_t heads, std::int64_t seq,
                     std::int64_t head_dim) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  if (row >= rows) return;
  T* out = to + v::row_offset(to_strides, row, heads, seq);
  if (from == nullptr) {
    for (std::int64_t i = threadIdx.x % 32; i < head_dim; i += 32) out[i] = T{};
    return;
  }
  const T* in = from + v::row_offset(from_strides, row, heads, seq);
  for (std::int64_t i = threadIdx.x % 32; i < head_dim; i += 32) out[i] = in[i];
}

template <typename T>
void copy_rows(const T* from, const AttentionStrides& from_strides, T* to, const AttentionStrides& to_strides,
               const AttentionDims& d, std::int64_t heads, cudaStream_t stream) {
  const std::int64_t rows = d.batch * heads * d.seq;
  copy_rows_kernel<T><<<static_cast<unsigned>(ceil_div<std::int64_t>(rows, 8)), 256, 0, stream>>>(
      from, v::resolved(from_strides, heads, d.seq, d.head_dim), to, v::resolved(to_strides, heads, d.seq, d.head_dim),
      rows, heads, d.seq, d.head_dim);
  CUDALAB_CHECK_LAUNCH();
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
  args.window_left = options.window_left;
  args.window_right = options.window_right;
}

v::AttentionShape shape_of(const AttentionDims& d, std::size_t element_size, const AttentionOptions& options) {
  return {d.batch,
          d.heads,
          d.kv_heads,
          d.seq,
          d.head_dim,
          element_size,
          current_gpu().compute_capability,
          v::window_binds(d.seq, options.causal, options.window_left, options.window_right)};
}

// The fastest rung that runs the problem: the Hopper kernel (wgmma_pingpong) on sm_90a builds and
// compute capability 9.0; else the mma.sync kernel with overlapped copies (mma_pipelined, sm_80 and
// newer); elsewhere (fp32, other head dims, older GPUs) the CUDA-core FlashAttention-2 split (tiled).
// Arrays in another layout than dense go to the Hopper kernel where they lie, and to the others as
// dense copies in stream-ordered scratch (o copied back).
template <typename T>
void forward(const T* q, const T* k, const T* v, T* o, float* lse, const AttentionDims& d,
             const AttentionOptions& options, cudaStream_t stream) {
  const bool work = require_dims(kForward, d);
  require_scale(kForward, options);
  if (!work) return;
  const AttentionLayout& layout = options.layout;
  const Array q_array{"q", q, layout.q, d.heads}, k_array{"k", k, layout.k, d.kv_heads},
      v_array{"v", v, layout.v, d.kv_heads}, o_array{"o", o, layout.o, d.heads};
  const std::int64_t rows = d.batch * d.heads * d.seq;
  require_arrays(kForward,
                 {span_array(kForward, q_array, d, sizeof(T)), span_array(kForward, k_array, d, sizeof(T)),
                  span_array(kForward, v_array, d, sizeof(T))},
                 {span_array(kForward, o_array, d, sizeof(T)), {lse, rows, sizeof(float), "lse"}});
  require_rows_apart(kForward, o_array, d);
  const bool dense = v::is_dense(layout.q) && v::is_dense(layout.k) && v::is_dense(layout.v) && v::is_dense(layout.o);

  v::AttentionArgs<T> args;
  args.q = q;
  args.k = k;
  args.v = v;
  args.o = o;
  args.lse = lse;
  set_problem(args, d, options);
  const v::AttentionShape shape = shape_of(d, sizeof(T), options);
  if constexpr (sizeof(T) == 2) {
    const bool aligned = is_aligned16(q) && is_aligned16(k) && is_aligned16(v) && is_aligned16(o);
    if (aligned && tma_strides({layout.q, layout.k, layout.v, layout.o}) && v::wgmma_limits(shape).empty()) {
      args.layout = layout;
      return v::wgmma_pingpong(args, stream);
    }
  }
  if (!dense) {
    const std::int64_t q_count = rows * d.head_dim, kv_count = d.batch * d.kv_heads * d.seq * d.head_dim;
    StreamOrderedWorkspace scratch(stream);
    T* q_copy = static_cast<T*>(scratch.reserve(static_cast<std::size_t>(2 * q_count + 2 * kv_count) * sizeof(T)));
    T *k_copy = q_copy + q_count, *v_copy = k_copy + kv_count, *o_copy = v_copy + kv_count;
    copy_rows(q, layout.q, q_copy, {}, d, d.heads, stream);
    copy_rows(k, layout.k, k_copy, {}, d, d.kv_heads, stream);
    copy_rows(v, layout.v, v_copy, {}, d, d.kv_heads, stream);
    AttentionOptions dense_options = options;
    dense_options.layout = {};
    forward(q_copy, k_copy, v_copy, o_copy, lse, d, dense_options, stream);
    copy_rows(o_copy, {}, o, layout.o, d, d.heads, stream);
    return;
  }
  if constexpr (sizeof(T) == 2) {
    const bool aligned = is_aligned16(q) && is_aligned16(k) && is_aligned16(v) && is_aligned16(o);
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

BackwardPlan plan_backward(const char* call, const AttentionDims& d, std::size_t element_size, bool aligned,
                           bool deterministic) {
  // Every backward kernel takes a window: it does not change the plan.
  const v::AttentionShape shape = shape_of(d, element_size, {});
  const bool hopper = aligned && v::wgmma_backward_limits(shape).empty();
  if (hopper || (aligned && v::mma_backward_limits(shape).empty())) {
    CUDALAB_REQUIRE(hopper || !deterministic,
                    std::string(call) +
                        ": a deterministic backward runs on Hopper's tensor-core kernel or the "
                        "CUDA-core fallback; this GPU's tensor-core kernel sums dQ by atomics");
    // head_dim is at most 128 here: the accumulator's columns + 1 cannot overflow.
    CUDALAB_REQUIRE(
        d.batch * d.heads * d.seq <=
            std::numeric_limits<std::int64_t>::max() / 4 / (v::dq_accumulator_columns(d.head_dim) + 2),
        std::string(call) +
            ": the workspace, batch * heads * seq * (head_dim rounded up to 64 or 128, + 1) floats, overflows 64 bits");
    return {hopper ? BackwardKernel::wgmma : BackwardKernel::mma,
            v::mma_backward_workspace_bytes(d.batch, d.heads, d.seq, d.head_dim) +
                (deterministic ? v::dq_order_bytes(d.batch, d.heads, d.seq) : 0)};
  }
  const std::string why = v::naive_backward_limits(shape);
  CUDALAB_REQUIRE(why.empty(), std::string(call) + ": " + why);
  return {BackwardKernel::naive, v::naive_backward_workspace_bytes(d.batch, d.heads, d.seq)};
}

// Both attention_backward overloads: `scratch` is the stream-ordered allocator or the caller's
// buffer. Arrays in another layout than dense go to the Hopper kernel where they lie, and to the
// others as dense copies in stream-ordered scratch (dq, dk and dv copied back).
template <typename T>
void backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o, T* dq, T* dk, T* dv,
              const AttentionDims& d, const AttentionOptions& options, Workspace& scratch, cudaStream_t stream) {
  const bool work = require_dims(kBackward, d);
  require_scale(kBackward, options);
  if (!work) return;
  const AttentionLayout& layout = options.layout;
  const std::int64_t rows = d.batch * d.heads * d.seq;
  const Array q_array{"q", q, layout.q, d.heads}, k_array{"k", k, layout.k, d.kv_heads},
      v_array{"v", v, layout.v, d.kv_heads}, o_array{"o", o, layout.o, d.heads},
      do_array{"d_o", d_o, layout.d_o, d.heads}, dq_array{"dq", dq, layout.dq, d.heads},
      dk_array{"dk", dk, layout.dk, d.kv_heads}, dv_array{"dv", dv, layout.dv, d.kv_heads};
  const auto span = [&](const Array& a) { return span_array(kBackward, a, d, sizeof(T)); };
  for (const Array* out : {&dq_array, &dk_array, &dv_array}) {
    require_arrays(
        kBackward,
        {span(q_array), span(k_array), span(v_array), span(o_array), span(do_array), {lse, rows, sizeof(float), "lse"}},
        {span(*out)});
    require_rows_apart(kBackward, *out, d);
  }
  require_outputs_apart(kBackward, dq_array, dk_array, d, sizeof(T));
  require_outputs_apart(kBackward, dq_array, dv_array, d, sizeof(T));
  require_outputs_apart(kBackward, dk_array, dv_array, d, sizeof(T));
  const bool aligned = is_aligned16(q) && is_aligned16(k) && is_aligned16(v) && is_aligned16(o) && is_aligned16(d_o) &&
                       is_aligned16(dq) && is_aligned16(dk) && is_aligned16(dv);
  const bool dense = v::is_dense(layout.q) && v::is_dense(layout.k) && v::is_dense(layout.v) && v::is_dense(layout.o) &&
                     v::is_dense(layout.d_o) && v::is_dense(layout.dq) && v::is_dense(layout.dk) &&
                     v::is_dense(layout.dv);
  const bool in_place =
      sizeof(T) == 2 && aligned &&
      tma_strides({layout.q, layout.k, layout.v, layout.o, layout.d_o, layout.dq, layout.dk, layout.dv}) &&
      v::wgmma_backward_limits(shape_of(d, sizeof(T), options)).empty();
  if (!dense && !in_place) {
    const std::int64_t q_count = rows * d.head_dim, kv_count = d.batch * d.kv_heads * d.seq * d.head_dim;
    StreamOrderedWorkspace copies(stream);
    T* q_copy = static_cast<T*>(copies.reserve(static_cast<std::size_t>(4 * q_count + 4 * kv_count) * sizeof(T)));
    T *k_copy = q_copy + q_count, *v_copy = k_copy + kv_count, *o_copy = v_copy + kv_count;
    T *do_copy = o_copy + q_count, *dq_copy = do_copy + q_count, *dk_copy = dq_copy + q_count;
    T* dv_copy = dk_copy + kv_count;
    copy_rows(q, layout.q, q_copy, {}, d, d.heads, stream);
    copy_rows(k, layout.k, k_copy, {}, d, d.kv_heads, stream);
    copy_rows(v, layout.v, v_copy, {}, d, d.kv_heads, stream);
    copy_rows(o, layout.o, o_copy, {}, d, d.heads, stream);
    copy_rows(d_o, layout.d_o, do_copy, {}, d, d.heads, stream);
    AttentionOptions dense_options = options;
    dense_options.layout = {};
    backward(q_copy, k_copy, v_copy, o_copy, lse, do_copy, dq_copy, dk_copy, dv_copy, d, dense_options, scratch,
             stream);
    copy_rows(dq_copy, {}, dq, layout.dq, d, d.heads, stream);
    copy_rows(dk_copy, {}, dk, layout.dk, d, d.kv_heads, stream);
    copy_rows(dv_copy, {}, dv, layout.dv, d, d.kv_heads, stream);
    return;
  }
  const BackwardPlan plan = plan_backward(kBackward, d, sizeof(T), aligned, options.deterministic);

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
  args.layout = layout;
  args.deterministic = options.deterministic;
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

// ---- Variable-length batches: batch 1 of total_q query rows and total_k key rows, on the Hopper
// kernels (wgmma_pingpong, wgmma_backward) with VarlenRows.

// Where a variable-length batch's array's rows lie as the kernels take them, for `heads` heads of
// head_dim: [total, heads, head_dim] when `s` is the default, else s's head and row strides. The
// batch stride reaches nothing (batch 1); 8 keeps it on TMA's 16-byte rule.
AttentionStrides varlen_strides(const AttentionStrides& s, std::int64_t heads, std::int64_t head_dim) {
  if (v::is_dense(s)) return {8, head_dim, heads * head_dim};
  return {8, s.head, s.row};
}

// The query side's and the key side's dims of a variable-length batch, as batch 1.
AttentionDims varlen_query_dims(const AttentionVarlenDims& d) {
  return {1, d.heads, d.kv_heads, d.total_q, d.head_dim};
}
AttentionDims varlen_key_dims(const AttentionVarlenDims& d) { return {1, d.heads, d.kv_heads, d.total_k, d.head_dim}; }

// The checks of a variable-length batch that need no arrays: its sizes, and whether the Hopper
// kernels run it (elements of `element_size` bytes; the backward's kernel when `backward`). False
// when there is no query row: nothing to compute but (backward) zero gradients of the keys.
bool require_varlen_dims(const char* call, const AttentionVarlenDims& d, std::size_t element_size, bool causal,
                         std::int64_t window_left, std::int64_t window_right, bool backward) {
  const std::string prefix = std::string(call) + ": ";
  CUDALAB_REQUIRE(d.sequences >= 0 && d.heads >= 0 && d.kv_heads >= 0 && d.total_q >= 0 && d.total_k >= 0 &&
                      d.max_seqlen_q >= 0 && d.max_seqlen_k >= 0 && d.head_dim >= 0,
                  prefix +
                      "sequences, heads, kv_heads, total_q, total_k, max_seqlen_q, max_seqlen_k and head_dim "
                      "must be >= 0");
  CUDALAB_REQUIRE(d.kv_heads > 0 ? d.heads % d.kv_heads == 0 : d.heads == 0,
                  prefix + "heads (" + std::to_string(d.heads) + ") must be a multiple of kv_heads (" +
                      std::to_string(d.kv_heads) + ")");
  // cu_seqlens are int32, and TMA's coordinates 32-bit; a block row's window sum stays in 32 bits.
  constexpr std::int64_t kRowLimit = 0x7fffffffLL - 256;
  CUDALAB_REQUIRE(d.total_q <= kRowLimit && d.total_k <= kRowLimit && d.max_seqlen_q + d.max_seqlen_k <= kRowLimit,
                  prefix +
                      "total_q, total_k and max_seqlen_q + max_seqlen_k must stay below 2^31 - 256 "
                      "(int32 cumulative lengths, 32-bit TMA coordinates)");
  CUDALAB_REQUIRE(d.sequences <= 65535 && d.heads <= 65535,
                  prefix + "sequences and heads must be at most 65535 (the launch's grid), got " +
                      std::to_string(d.sequences) + " and " + std::to_string(d.heads));
  if (d.sequences == 0 || d.heads == 0 || d.head_dim == 0) return false;
  const v::AttentionShape shape{1,
                                d.heads,
                                d.kv_heads,
                                std::max(d.total_q, d.total_k),
                                d.head_dim,
                                element_size,
                                current_gpu().compute_capability,
                                v::window_binds(std::max(d.total_q, d.total_k), causal, window_left, window_right)};
  const std::string why = backward ? v::wgmma_backward_limits(shape) : v::wgmma_limits(shape);
  CUDALAB_REQUIRE(why.empty(), prefix + "variable-length batches run on the Hopper tensor-core kernels only: " + why);
  return d.total_q > 0;
}

// The variable-length parts of a launch's arguments, and the problem's (batch 1, seq = total_q).
template <typename Args>
void set_varlen_problem(Args& args, const AttentionVarlenDims& d, const std::int32_t* cu_seqlens_q,
                        const std::int32_t* cu_seqlens_k, const AttentionOptions& options) {
  set_problem(args, varlen_query_dims(d), options);
  args.varlen = {cu_seqlens_q, cu_seqlens_k, d.sequences, d.total_k, d.max_seqlen_q, d.max_seqlen_k};
}

// The layout rule of every variable-length call: 16-byte aligned arrays, strides in 16-byte steps.
void require_varlen_layout(const char* call, std::initializer_list<const void*> arrays,
                           std::initializer_list<AttentionStrides> strides) {
  bool aligned = true;
  for (const void* a : arrays) aligned = aligned && is_aligned16(a);
  CUDALAB_REQUIRE(aligned && tma_strides(strides),
                  std::string(call) +
                      ": variable-length batches need 16-byte aligned arrays and head and row "
                      "strides that are positive multiples of 8 elements (TMA)");
}

template <typename T>
void forward_varlen(const T* q, const T* k, const T* v, const std::int32_t* cu_seqlens_q,
                    const std::int32_t* cu_seqlens_k, T* o, float* lse, const AttentionVarlenDims& d,
                    const AttentionOptions& options, cudaStream_t stream) {
  constexpr const char* call = kForwardVarlen;
  require_scale(call, options);
  if (!require_varlen_dims(call, d, sizeof(T), options.causal, options.window_left, options.window_right, false))
    return;
  const AttentionLayout& l = options.layout;
  const AttentionStrides qs = varlen_strides(l.q, d.heads, d.head_dim),
                         ks = varlen_strides(l.k, d.kv_heads, d.head_dim),
                         vs = varlen_strides(l.v, d.kv_heads, d.head_dim),
                         os = varlen_strides(l.o, d.heads, d.head_dim);
  const AttentionDims q_dims = varlen_query_dims(d), k_dims = varlen_key_dims(d);
  const Array o_array{"o", o, os, d.heads};
  require_arrays(call,
                 {span_array(call, {"q", q, qs, d.heads}, q_dims, sizeof(T)),
                  span_array(call, {"k", k, ks, d.kv_heads}, k_dims, sizeof(T)),
                  span_array(call, {"v", v, vs, d.kv_heads}, k_dims, sizeof(T)),
                  {cu_seqlens_q, d.sequences + 1, sizeof(std::int32_t), "cu_seqlens_q"},
                  {cu_seqlens_k, d.sequences + 1, sizeof(std::int32_t), "cu_seqlens_k"}},
                 {span_array(call, o_array, q_dims, sizeof(T)), {lse, d.heads * d.total_q, sizeof(float), "lse"}});
  require_rows_apart(call, o_array, q_dims);
  // Without keys no K or V row is read: q stands in for them, so that TMA maps a real array.
  const T* keys = d.total_k > 0 ? k : q;
  const T* values = d.total_k > 0 ? v : q;
  require_varlen_layout(call, {q, keys, values, o}, {qs, ks, vs, os});
  v::AttentionArgs<T> args;
  args.q = q;
  args.k = keys;
  args.v = values;
  args.o = o;
  args.lse = lse;
  set_varlen_problem(args, d, cu_seqlens_q, cu_seqlens_k, options);
  args.layout.q = qs, args.layout.k = ks, args.layout.v = vs, args.layout.o = os;
  if constexpr (sizeof(T) == 2) v::wgmma_pingpong(args, stream);  // fp32 was refused above
}

template <typename T>
void backward_varlen(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o,
                     const std::int32_t* cu_seqlens_q, const std::int32_t* cu_seqlens_k, T* dq, T* dk, T* dv,
                     const AttentionVarlenDims& d, const AttentionOptions& options, Workspace& scratch,
                     cudaStream_t stream) {
  constexpr const char* call = kBackwardVarlen;
  require_scale(call, options);
  CUDALAB_REQUIRE(!options.deterministic,
                  std::string(call) +
                      ": a variable-length batch's dQ is summed in no fixed order (no deterministic "
                      "form is built)");
  const bool queries =
      require_varlen_dims(call, d, sizeof(T), options.causal, options.window_left, options.window_right, true);
  if (d.sequences == 0 || d.heads == 0 || d.head_dim == 0) return;
  const AttentionLayout& l = options.layout;
  const auto query_side = [&](const AttentionStrides& s) { return varlen_strides(s, d.heads, d.head_dim); };
  const auto key_side = [&](const AttentionStrides& s) { return varlen_strides(s, d.kv_heads, d.head_dim); };
  const AttentionStrides qs = query_side(l.q), os = query_side(l.o), dos = query_side(l.d_o), dqs = query_side(l.dq);
  const AttentionStrides ks = key_side(l.k), vs = key_side(l.v), dks = key_side(l.dk), dvs = key_side(l.dv);
  const AttentionDims q_dims = varlen_query_dims(d), k_dims = varlen_key_dims(d);
  const Array dq_array{"dq", dq, dqs, d.heads}, dk_array{"dk", dk, dks, d.kv_heads},
      dv_array{"dv", dv, dvs, d.kv_heads};
  const ArraySpan dq_span = span_array(call, dq_array, q_dims, sizeof(T)),
                  dk_span = span_array(call, dk_array, k_dims, sizeof(T)),
                  dv_span = span_array(call, dv_array, k_dims, sizeof(T));
  for (const ArraySpan& out : {dq_span, dk_span, dv_span})
    require_arrays(call,
                   {span_array(call, {"q", q, qs, d.heads}, q_dims, sizeof(T)),
                    span_array(call, {"k", k, ks, d.kv_heads}, k_dims, sizeof(T)),
                    span_array(call, {"v", v, vs, d.kv_heads}, k_dims, sizeof(T)),
                    span_array(call, {"o", o, os, d.heads}, q_dims, sizeof(T)),
                    span_array(call, {"d_o", d_o, dos, d.heads}, q_dims, sizeof(T)),
                    {lse, d.heads * d.total_q, sizeof(float), "lse"},
                    {cu_seqlens_q, d.sequences + 1, sizeof(std::int32_t), "cu_seqlens_q"},
                    {cu_seqlens_k, d.sequences + 1, sizeof(std::int32_t), "cu_seqlens_k"}},
                   {out});
  require_rows_apart(call, dq_array, q_dims);
  require_rows_apart(call, dk_array, k_dims);
  require_rows_apart(call, dv_array, k_dims);
  require_outputs_apart(call, dk_array, dv_array, k_dims, sizeof(T));
  // dq against dk and dv: apart, or (self-attention, one row count) one packed array's heads.
  for (const Array* key_out : {&dk_array, &dv_array}) {
    const ArraySpan& key_span = key_out == &dk_array ? dk_span : dv_span;
    if (d.total_q == d.total_k) {
      require_outputs_apart(call, dq_array, *key_out, q_dims, sizeof(T));
    } else {
      CUDALAB_REQUIRE(dq_span.end() <= key_span.begin() || key_span.end() <= dq_span.begin() || dq_span.count == 0 ||
                          key_span.count == 0,
                      std::string(call) + ": dq must not overlap " + key_out->name);
    }
  }
  if (!queries) {
    // No query sees a key: dK = dV = 0.
    if (d.total_k > 0) {
      copy_rows<T>(nullptr, {}, dk, dks, k_dims, d.kv_heads, stream);
      copy_rows<T>(nullptr, {}, dv, dvs, k_dims, d.kv_heads, stream);
    }
    return;
  }
  const T* keys = d.total_k > 0 ? k : q;
  const T* values = d.total_k > 0 ? v : q;
  T* key_gradients = d.total_k > 0 ? dk : dq;
  T* value_gradients = d.total_k > 0 ? dv : dq;
  require_varlen_layout(call, {q, keys, values, o, d_o, dq, key_gradients, value_gradients},
                        {qs, ks, vs, os, dos, dqs, dks, dvs});
  v::AttentionBackwardArgs<T> args;
  args.q = q;
  args.k = keys;
  args.v = values;
  args.o = o;
  args.d_o = d_o;
  args.lse = lse;
  args.dq = dq;
  args.dk = key_gradients;
  args.dv = value_gradients;
  set_varlen_problem(args, d, cu_seqlens_q, cu_seqlens_k, options);
  args.layout = {qs, ks, vs, os, dos, dqs, dks, dvs};
  args.workspace_bytes = v::mma_backward_workspace_bytes(1, d.heads, d.total_q, d.head_dim);
  args.workspace = scratch.reserve(args.workspace_bytes);
  CUDALAB_REQUIRE(is_aligned16(args.workspace), std::string(call) + ": workspace must be 16-byte aligned");
  if constexpr (sizeof(T) == 2) v::wgmma_backward(args, stream);  // fp32 was refused above
}

// Whether decode takes the split-KV kernel for `d` of `element_size`-byte elements in pages of
// `page_size` keys (0: dense), given 16-byte aligned arrays.
bool decode_splits_kv(const AttentionDecodeDims& d, std::size_t element_size, std::int64_t page_size) {
  return element_size == 2 && (page_size == 0 || v::decode_split_page_limits(page_size).empty()) &&
         v::decode_split_limits(d.heads, d.kv_heads, d.tokens, d.head_dim, current_gpu().compute_capability).empty();
}

// The library's decode over dense caches, or paged ones when `paged` is not null: split_mma where it
// runs the problem on 16-byte aligned arrays, else naive.
template <typename T>
void decode(const char* call, const T* q, const T* k, const T* v, const AttentionDecodePages* paged,
            const std::int32_t* lengths, T* o, float* lse, const AttentionDecodeDims& d,
            const AttentionOptions& options, Workspace& scratch, cudaStream_t stream) {
  const std::string prefix = std::string(call) + ": ";
  CUDALAB_REQUIRE(d.batch >= 0 && d.heads >= 0 && d.kv_heads >= 0 && d.tokens >= 0 && d.cache >= 0 && d.head_dim >= 0,
                  prefix + "batch, heads, kv_heads, tokens, cache and head_dim must be >= 0");
  CUDALAB_REQUIRE(d.kv_heads > 0 ? d.heads % d.kv_heads == 0 : d.heads == 0,
                  prefix + "heads (" + std::to_string(d.heads) + ") must be a multiple of kv_heads (" +
                      std::to_string(d.kv_heads) + ")");
  CUDALAB_REQUIRE(d.tokens <= d.cache, prefix + "tokens (" + std::to_string(d.tokens) + ") must be at most cache (" +
                                           std::to_string(d.cache) + "): the new tokens' keys are in the cache");
  require_scale(call, options);
  const AttentionLayout& l = options.layout;
  CUDALAB_REQUIRE(v::is_dense(l.q) && v::is_dense(l.k) && v::is_dense(l.v) && v::is_dense(l.o),
                  prefix + "q, the caches and o must be dense (options.layout is the default)");
  const std::int64_t queries =
      checked_product(call, "batch * heads * tokens * head_dim", {d.batch, d.heads, d.tokens, d.head_dim});
  std::int64_t cached = 0, table = 0;
  if (paged != nullptr) {
    CUDALAB_REQUIRE(paged->page_size > 0 && d.cache % paged->page_size == 0 && paged->pages >= 0,
                    prefix + "page_size must be >= 1 and divide cache (" + std::to_string(d.cache) +
                        "), and pages >= 0; got page_size " + std::to_string(paged->page_size) + ", pages " +
                        std::to_string(paged->pages));
    cached = checked_product(call, "pages * kv_heads * page_size * head_dim",
                             {paged->pages, d.kv_heads, paged->page_size, d.head_dim});
    table = checked_product(call, "batch * cache / page_size", {d.batch, d.cache / paged->page_size});
  } else {
    cached = checked_product(call, "batch * kv_heads * cache * head_dim", {d.batch, d.kv_heads, d.cache, d.head_dim});
  }
  if (queries == 0) return;
  // Every kernel's head_dim (split_mma's 64 and 128 are among naive's).
  const std::string naive_why = v::decode_naive_limits(d.head_dim);
  CUDALAB_REQUIRE(naive_why.empty(), prefix + naive_why);
  const std::int64_t rows = d.batch * d.heads * d.tokens;
  require_arrays(call,
                 {{q, queries, sizeof(T), "q"},
                  {k, cached, sizeof(T), "k_cache"},
                  {v, cached, sizeof(T), "v_cache"},
                  {lengths, d.batch, sizeof(std::int32_t), "lengths"},
                  {paged != nullptr ? paged->block_table : nullptr, table, sizeof(std::int32_t), "block_table"}},
                 {{o, queries, sizeof(T), "o"}, {lse, lse != nullptr ? rows : 0, sizeof(float), "lse"}});
  v::DecodeArgs<T> args;
  args.q = q;
  args.k = k;
  args.v = v;
  args.lengths = lengths;
  args.o = o;
  args.lse = lse;
  args.batch = d.batch;
  args.heads = d.heads;
  args.kv_heads = d.kv_heads;
  args.tokens = d.tokens;
  args.cache = d.cache;
  args.head_dim = d.head_dim;
  args.scale = options.scale > 0.0f ? options.scale : 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  args.causal = options.causal;
  args.window_left = options.window_left;
  args.window_right = options.window_right;
  if (paged != nullptr) {
    args.block_table = paged->block_table;
    args.page_size = paged->page_size;
  }
  if constexpr (sizeof(T) == 2) {
    const bool aligned = is_aligned16(q) && is_aligned16(k) && is_aligned16(v) && is_aligned16(o);
    if (aligned && decode_splits_kv(d, sizeof(T), paged != nullptr ? paged->page_size : 0)) {
      args.workspace_bytes = v::decode_workspace_bytes(d.batch, d.heads, d.kv_heads, d.tokens, d.cache, d.head_dim);
      args.workspace = scratch.reserve(args.workspace_bytes);
      CUDALAB_REQUIRE(args.workspace_bytes == 0 || is_aligned16(args.workspace),
                      prefix + "workspace must be 16-byte aligned");
      v::decode_split_mma(args, stream);
      return;
    }
  }
  v::decode_naive(args, stream);
}

}  // namespace

template <typename T, typename>
void attention_decode(const T* q, const T* k_cache, const T* v_cache, const std::int32_t* lengths, T* o, float* lse,
                      const AttentionDecodeDims& dims, const AttentionOptions& options, cudaStream_t stream) {
  StreamOrderedWorkspace scratch(stream);
  decode(kDecode, q, k_cache, v_cache, nullptr, lengths, o, lse, dims, options, scratch, stream);
}

template <typename T, typename>
void attention_decode(const T* q, const T* k_cache, const T* v_cache, const std::int32_t* lengths, T* o, float* lse,
                      const AttentionDecodeDims& dims, const AttentionOptions& options, void* workspace,
                      std::size_t workspace_bytes, cudaStream_t stream) {
  CallerWorkspace scratch(workspace, workspace_bytes, kDecode, kDecodeWorkspace);
  decode(kDecode, q, k_cache, v_cache, nullptr, lengths, o, lse, dims, options, scratch, stream);
}

std::size_t attention_decode_workspace_bytes(const AttentionDecodeDims& dims, DType dtype, std::int64_t page_size) {
  CUDALAB_REQUIRE(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
                  std::string(kDecodeWorkspace) + ": dtype must be f32, bf16 or f16, got " + to_string(dtype));
  CUDALAB_REQUIRE(dims.batch >= 0 && dims.heads >= 0 && dims.kv_heads >= 0 && dims.tokens >= 0 && dims.cache >= 0 &&
                      dims.head_dim >= 0 && page_size >= 0,
                  std::string(kDecodeWorkspace) + ": sizes must be >= 0");
  if (checked_product(kDecodeWorkspace, "batch * heads * tokens * head_dim",
                      {dims.batch, dims.heads, dims.tokens, dims.head_dim}) == 0 ||
      !decode_splits_kv(dims, size_of(dtype), page_size))
    return 0;
  return v::decode_workspace_bytes(dims.batch, dims.heads, dims.kv_heads, dims.tokens, dims.cache, dims.head_dim);
}

template <typename T, typename>
void attention_decode_paged(const T* q, const T* k_pages, const T* v_pages, const AttentionDecodePages& pages,
                            const std::int32_t* lengths, T* o, float* lse, const AttentionDecodeDims& dims,
                            const AttentionOptions& options, cudaStream_t stream) {
  StreamOrderedWorkspace scratch(stream);
  decode(kDecodePaged, q, k_pages, v_pages, &pages, lengths, o, lse, dims, options, scratch, stream);
}

template <typename T, typename>
void attention_decode_paged(const T* q, const T* k_pages, const T* v_pages, const AttentionDecodePages& pages,
                            const std::int32_t* lengths, T* o, float* lse, const AttentionDecodeDims& dims,
                            const AttentionOptions& options, void* workspace, std::size_t workspace_bytes,
                            cudaStream_t stream) {
  CallerWorkspace scratch(workspace, workspace_bytes, kDecodePaged, kDecodeWorkspace);
  decode(kDecodePaged, q, k_pages, v_pages, &pages, lengths, o, lse, dims, options, scratch, stream);
}

template <typename T, typename>
void attention_forward_varlen(const T* q, const T* k, const T* v, const std::int32_t* cu_seqlens_q,
                              const std::int32_t* cu_seqlens_k, T* o, float* lse, const AttentionVarlenDims& dims,
                              const AttentionOptions& options, cudaStream_t stream) {
  forward_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, o, lse, dims, options, stream);
}

std::size_t attention_backward_varlen_workspace_bytes(const AttentionVarlenDims& dims, DType dtype) {
  CUDALAB_REQUIRE(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
                  std::string(kBackwardVarlenWorkspace) + ": dtype must be f32, bf16 or f16, got " + to_string(dtype));
  if (!require_varlen_dims(kBackwardVarlenWorkspace, dims, size_of(dtype), false, -1, -1, true)) return 0;
  return v::mma_backward_workspace_bytes(1, dims.heads, dims.total_q, dims.head_dim);
}

template <typename T, typename>
void attention_backward_varlen(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o,
                               const std::int32_t* cu_seqlens_q, const std::int32_t* cu_seqlens_k, T* dq, T* dk, T* dv,
                               const AttentionVarlenDims& dims, const AttentionOptions& options, cudaStream_t stream) {
  StreamOrderedWorkspace scratch(stream);
  backward_varlen(q, k, v, o, lse, d_o, cu_seqlens_q, cu_seqlens_k, dq, dk, dv, dims, options, scratch, stream);
}

template <typename T, typename>
void attention_backward_varlen(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* d_o,
                               const std::int32_t* cu_seqlens_q, const std::int32_t* cu_seqlens_k, T* dq, T* dk, T* dv,
                               const AttentionVarlenDims& dims, const AttentionOptions& options, void* workspace,
                               std::size_t workspace_bytes, cudaStream_t stream) {
  CallerWorkspace scratch(workspace, workspace_bytes, kBackwardVarlen, kBackwardVarlenWorkspace);
  backward_varlen(q, k, v, o, lse, d_o, cu_seqlens_q, cu_seqlens_k, dq, dk, dv, dims, options, scratch, stream);
}

template <typename T, typename>
void attention_forward(const T* q, const T* k, const T* v, T* o, float* lse, const AttentionDims& dims,
                       const AttentionOptions& options, cudaStream_t stream) {
  forward(q, k, v, o, lse, dims, options, stream);
}

std::size_t attention_backward_workspace_bytes(const AttentionDims& dims, DType dtype, bool aligned,
                                               bool deterministic) {
  CUDALAB_REQUIRE(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
                  std::string(kBackwardWorkspace) + ": dtype must be f32, bf16 or f16, got " + to_string(dtype));
  if (!require_dims(kBackwardWorkspace, dims)) return 0;
  return plan_backward(kBackwardWorkspace, dims, size_of(dtype), aligned, deterministic).workspace_bytes;
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

#define CUDALAB_ATTENTION_ENTRIES(T, a, b)                                                                             \
  template void attention_forward(const T*, const T*, const T*, T*, float*, const AttentionDims&,                      \
                                  const AttentionOptions&, cudaStream_t);                                              \
  template void attention_backward(const T*, const T*, const T*, const T*, const float*, const T*, T*, T*, T*,         \
                                   const AttentionDims&, const AttentionOptions&, cudaStream_t);                       \
  template void attention_backward(const T*, const T*, const T*, const T*, const float*, const T*, T*, T*, T*,         \
                                   const AttentionDims&, const AttentionOptions&, void*, std::size_t, cudaStream_t);   \
  template void attention_forward_varlen(const T*, const T*, const T*, const std::int32_t*, const std::int32_t*, T*,   \
                                         float*, const AttentionVarlenDims&, const AttentionOptions&, cudaStream_t);   \
  template void attention_backward_varlen(const T*, const T*, const T*, const T*, const float*, const T*,              \
                                          const std::int32_t*, const std::int32_t*, T*, T*, T*,                        \
                                          const AttentionVarlenDims&, const AttentionOptions&, cudaStream_t);          \
  template void attention_backward_varlen(                                                                             \
      const T*, const T*, const T*, const T*, const float*, const T*, const std::int32_t*, const std::int32_t*, T*,    \
      T*, T*, const AttentionVarlenDims&, const AttentionOptions&, void*, std::size_t, cudaStream_t);                  \
  template void attention_decode(const T*, const T*, const T*, const std::int32_t*, T*, float*,                        \
                                 const AttentionDecodeDims&, const AttentionOptions&, cudaStream_t);                   \
  template void attention_decode(const T*, const T*, const T*, const std::int32_t*, T*, float*,                        \
                                 const AttentionDecodeDims&, const AttentionOptions&, void*, std::size_t,              \
                                 cudaStream_t);                                                                        \
  template void attention_decode_paged(const T*, const T*, const T*, const AttentionDecodePages&, const std::int32_t*, \
                                       T*, float*, const AttentionDecodeDims&, const AttentionOptions&, cudaStream_t); \
  template void attention_decode_paged(const T*, const T*, const T*, const AttentionDecodePages&, const std::int32_t*, \
                                       T*, float*, const AttentionDecodeDims&, const AttentionOptions&, void*,         \
                                       std::size_t, cudaStream_t);
CUDALAB_ATTENTION_ELEMENTS(CUDALAB_ATTENTION_ENTRIES, , )

}  // namespace cudalab
