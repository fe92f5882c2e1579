// Scaled dot-product attention as torch ops: the forward, O = softmax(scale * Q K^T [causal, window
// mask]) V and each query row's log-sum-exp, on cudalab::attention_forward; and its backward, dQ,
// dK and dV from dO and the forward's O and L, on cudalab::attention_backward, which ops.py
// registers as the forward's autograd formula (autograd.cpp). The library takes one sequence length
// for queries and keys (self-attention, or cross-attention over equal lengths), so q, k and v share
// seq; k and v may have fewer heads than q (grouped-query attention). Arrays are read where they
// lie whatever their batch, head and position strides, head_dim contiguous: a [batch, seq, heads,
// head_dim] tensor's .transpose(1, 2) costs no copy. attention_packed takes q, k and v packed in
// one [batch, seq, (heads + 2 kv_heads) * head_dim] tensor (a fused projection's output) and gives
// o as [batch, seq, heads * head_dim]; its backward writes dq, dk and dv into one such tensor.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ATen/Context.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/attention.hpp"
#include "cudalab/dtype.hpp"

namespace cudalab::torch_ops {
namespace {

// A tensor beside q (k, v, o, do): on q's device, of q's dtype, head_dim contiguous.
void check_like_q(const char* op, const char* name, const at::Tensor& t, const at::Tensor& q) {
  check_strided_tensor(op, name, t, q.device());
  TORCH_CHECK_TYPE(t.scalar_type() == q.scalar_type(), "cudalab.", op, ": ", name, " must be ",
                   dtype_names(q.scalar_type()), " like q, got ", dtype_names(t.scalar_type()));
  TORCH_CHECK(t.dim() == 0 || t.size(-1) <= 1 || t.stride(-1) == 1, "cudalab.", op, ": ", name,
              "'s last dimension (head_dim) must be contiguous (call .contiguous() first; cudalab does not copy "
              "behind your back), got strides ",
              t.strides());
}

// Where a [batch, heads, seq, head_dim] tensor's rows lie, for the library: the default (dense)
// where it is contiguous. A dimension of size 1 gets stride 8 whatever torch gave it (any stride
// reaches nothing there, and 8 keeps the tensor on the Hopper kernels' 16-byte rule).
AttentionStrides strides_of(const at::Tensor& t) {
  if (t.is_contiguous()) return {};
  const auto stride = [&](int dim) { return t.size(dim) == 1 ? std::int64_t{8} : t.stride(dim); };
  return {stride(0), stride(1), stride(2)};
}

// An output like `t` ([batch, heads, seq, head_dim]): laid out [batch, seq, heads, head_dim] (and
// returned transposed) where t's heads lie closer than its positions, as a transposed projection
// output's do; dense otherwise. The fake kernels in ops.py follow the same rule.
at::Tensor empty_laid_out_like(const at::Tensor& t) {
  if (t.stride(1) < t.stride(2))
    return at::empty({t.size(0), t.size(2), t.size(1), t.size(3)}, t.options()).transpose(1, 2);
  return at::empty(t.sizes(), t.options());
}

// k or v: [batch, kv_heads, seq, head_dim] with q's batch, seq and head_dim, and q's dtype.
void check_key_or_value(const char* op, const char* name, const at::Tensor& t, const at::Tensor& q) {
  check_like_q(op, name, t, q);
  TORCH_CHECK_VALUE(t.dim() == 4, "cudalab.", op, ": ", name, " must be [batch, kv_heads, seq, head_dim], got ",
                    t.sizes());
  TORCH_CHECK_VALUE(t.size(0) == q.size(0), "cudalab.", op, ": ", name, " must have q's batch ", q.size(0), ", got ",
                    t.sizes());
  TORCH_CHECK_VALUE(t.size(2) == q.size(2), "cudalab.", op, ": ", name, " must have q's seq ", q.size(2),
                    " (the library takes one sequence length for queries and keys), got ", t.sizes());
  TORCH_CHECK_VALUE(t.size(3) == q.size(3), "cudalab.", op, ": ", name, " must have q's head_dim ", q.size(3), ", got ",
                    t.sizes());
}

// The scale as the library takes it: the library computes in fp32 and reads 0 as 1 / sqrt(head_dim),
// so an explicit scale must stay finite and nonzero as a float.
float checked_scale(const char* op, const c10::optional<double>& scale) {
  const float library_scale = scale.has_value() ? static_cast<float>(*scale) : 0.0f;
  TORCH_CHECK_VALUE(!scale.has_value() || (std::isfinite(library_scale) && library_scale > 0.0f), "cudalab.", op,
                    ": scale must be > 0 and finite in float32 (None: 1 / sqrt(head_dim)), got ", *scale);
  return library_scale;
}

struct Problem {
  AttentionDims dims;
  AttentionOptions options;
};

// The options every self-attention op takes: the scale (checked), the causal mask and a sliding
// window (-1: a side unbounded).
AttentionOptions checked_options(const char* op, const c10::optional<double>& scale, bool causal,
                                 std::int64_t window_left, std::int64_t window_right) {
  TORCH_CHECK_VALUE(window_left >= -1 && window_right >= -1, "cudalab.", op,
                    ": window_left and window_right must be >= 0, or -1 (unbounded), got ", window_left, " and ",
                    window_right);
  AttentionOptions options;
  options.scale = checked_scale(op, scale);
  options.causal = causal;
  options.window_left = window_left;
  options.window_right = window_right;
  return options;
}

// q, k and v's checks and the library's dims and options for them: what the forward and the
// backward share.
Problem checked_problem(const char* op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        const c10::optional<double>& scale, bool causal, std::int64_t window_left,
                        std::int64_t window_right) {
  check_strided_tensor(op, "q", q, q.device(), c10::nullopt, scalar_types(AttentionElements{}));
  TORCH_CHECK_VALUE(q.dim() == 4, "cudalab.", op, ": q must be [batch, heads, seq, head_dim], got ", q.sizes());
  check_key_or_value(op, "k", k, q);
  check_key_or_value(op, "v", v, q);
  TORCH_CHECK_VALUE(v.sizes() == k.sizes(), "cudalab.", op, ": v must have k's shape ", k.sizes(), ", got ", v.sizes());
  const std::int64_t heads = q.size(1), kv_heads = k.size(1);
  TORCH_CHECK_VALUE(kv_heads > 0 ? heads % kv_heads == 0 : heads == 0, "cudalab.", op, ": q's heads (", heads,
                    ") must be a multiple of k and v's heads (", kv_heads, ")");
  AttentionOptions options = checked_options(op, scale, causal, window_left, window_right);
  // head_dim 0 would leave each row's log-sum-exp, log(its number of keys), unwritten by the library.
  TORCH_CHECK_VALUE(q.size(3) > 0 || q.size(0) * q.size(1) * q.size(2) == 0, "cudalab.", op,
                    ": head_dim must be at least 1, got q ", q.sizes());
  check_like_q(op, "q", q, q);
  options.layout.q = strides_of(q), options.layout.k = strides_of(k), options.layout.v = strides_of(v);
  return {AttentionDims{q.size(0), heads, kv_heads, q.size(2), q.size(3)}, options};
}

std::tuple<at::Tensor, at::Tensor> attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                             const c10::optional<double>& scale, bool causal, std::int64_t window_left,
                                             std::int64_t window_right) {
  constexpr const char* op = "attention";
  Problem p = checked_problem(op, q, k, v, scale, causal, window_left, window_right);
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor o = empty_laid_out_like(q);
  at::Tensor lse = at::empty(q.sizes().slice(0, 3), q.options().dtype(at::kFloat));
  p.options.layout.o = strides_of(o);
  with_element_type<AttentionElements>(q, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::attention_forward(data<T>(q), data<T>(k), data<T>(v), mutable_data<T>(o), lse.mutable_data_ptr<float>(),
                                 p.dims, p.options, current_stream(q));
    });
  });
  return {o, lse};
}

// The library's backward for the arrays at q's, k, v, o, lse, d_o, dq's, dk and dv (q and dq give
// the element type and device; k, v, dk and dv as raw pointers, as a packed call's point into q's
// and dq's storage), p's dims and options (its layout filled in). The scratch is sized for the
// path the library takes: the tensor-core one wherever the arrays are 16-byte aligned or laid out
// other than dense (such arrays run where they lie, or as dense copies, which are aligned).
void run_backward(const char* op, const at::Tensor& q, const void* k, const void* v, const at::Tensor& o,
                  const at::Tensor& lse, const at::Tensor& d_o, at::Tensor& dq, void* dk, void* dv, const Problem& p) {
  const AttentionLayout& l = p.options.layout;
  bool dense = true;
  for (const AttentionStrides* s : {&l.q, &l.k, &l.v, &l.o, &l.d_o, &l.dq, &l.dk, &l.dv})
    dense = dense && s->batch == 0 && s->head == 0 && s->row == 0;
  bool aligned = true;
  for (const void* at :
       {q.const_data_ptr(), k, v, o.const_data_ptr(), d_o.const_data_ptr(),
        static_cast<const void*>(dq.const_data_ptr()), static_cast<const void*>(dk), static_cast<const void*>(dv)})
    aligned = aligned && reinterpret_cast<std::uintptr_t>(at) % 16 == 0;
  // torch.use_deterministic_algorithms(True) asks for dQ's sums in a fixed order.
  AttentionOptions options = p.options;
  options.deterministic = at::globalContext().deterministicAlgorithms();
  with_element_type<AttentionElements>(q, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      const std::size_t bytes =
          cudalab::attention_backward_workspace_bytes(p.dims, dtype_of_v<T>, aligned || !dense, options.deterministic);
      // The tensor-core path's scratch is O(seq), dQ's fp32 accumulator and D (and a deterministic
      // call's counters, under a float a row); more is the CUDA-core fallback's P and dS, O(seq^2):
      // said once, since it is what runs a GPU out of memory.
      const AttentionDims& d = p.dims;
      if (bytes > 4 * static_cast<std::size_t>(d.batch * d.heads * d.seq * (d.head_dim + 2)))
        TORCH_WARN_ONCE("cudalab.", op, ": this backward runs the CUDA-core fallback, which holds P and dS of every ",
                        "(batch, head) in fp32: ", std::round(static_cast<double>(bytes) / (1 << 20) * 10) / 10,
                        " MiB of scratch here, 8 * batch * heads * seq^2 bytes. bfloat16 or float16 with head_dim 64 "
                        "or 128 at 16-byte aligned addresses takes the tensor-core kernel, whose scratch is O(seq).");
      at::Tensor scratch = workspace(q, bytes);
      cudalab::attention_backward(data<T>(q), static_cast<const T*>(k), static_cast<const T*>(v), data<T>(o),
                                  lse.const_data_ptr<float>(), data<T>(d_o), mutable_data<T>(dq), static_cast<T*>(dk),
                                  static_cast<T*>(dv), p.dims, options, scratch.mutable_data_ptr(), bytes,
                                  current_stream(q));
    });
  });
}

// O's gradient only: the autograd formula passes no gradient of L (ops.py marks it
// non-differentiable), so dL = 0 and D = rowsum(dO o O), as FlashAttention computes it.
std::tuple<at::Tensor, at::Tensor, at::Tensor> attention_backward(const at::Tensor& q, const at::Tensor& k,
                                                                  const at::Tensor& v, const at::Tensor& o,
                                                                  const at::Tensor& lse, const at::Tensor& d_o,
                                                                  const c10::optional<double>& scale, bool causal,
                                                                  std::int64_t window_left, std::int64_t window_right) {
  constexpr const char* op = "attention_backward";
  Problem p = checked_problem(op, q, k, v, scale, causal, window_left, window_right);
  check_like_q(op, "o", o, q);
  check_same_shape(op, "o", o, "q", q);
  check_like_q(op, "do", d_o, q);
  check_same_shape(op, "do", d_o, "q", q);
  check_statistics(op, "lse", lse, q.device(), p.dims.batch * p.dims.heads * p.dims.seq);
  TORCH_CHECK_VALUE(lse.sizes() == q.sizes().slice(0, 3), "cudalab.", op,
                    ": lse must be [batch, heads, seq] = ", q.sizes().slice(0, 3), ", got ", lse.sizes());
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor dq = empty_laid_out_like(q), dk = empty_laid_out_like(k), dv = empty_laid_out_like(v);
  AttentionLayout& layout = p.options.layout;
  layout.o = strides_of(o), layout.d_o = strides_of(d_o);
  layout.dq = strides_of(dq), layout.dk = strides_of(dk), layout.dv = strides_of(dv);
  run_backward(op, q, k.const_data_ptr(), v.const_data_ptr(), o, lse, d_o, dq, dk.mutable_data_ptr(),
               dv.mutable_data_ptr(), p);
  return {dq, dk, dv};
}

// q, k and v of a packed [batch, seq, (heads + 2 kv_heads) * head_dim] tensor: the problem (with
// q's, k's and v's strides) and where k and v start, in elements after q.
struct Packed {
  Problem problem;
  std::int64_t k_at, v_at;
};

Packed checked_packed(const char* op, const at::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads,
                      const c10::optional<double>& scale, bool causal, std::int64_t window_left,
                      std::int64_t window_right) {
  check_strided_tensor(op, "qkv", qkv, qkv.device(), c10::nullopt, scalar_types(AttentionElements{}));
  TORCH_CHECK_VALUE(qkv.dim() == 3, "cudalab.", op, ": qkv must be [batch, seq, (heads + 2 kv_heads) * head_dim], got ",
                    qkv.sizes());
  TORCH_CHECK_VALUE(heads > 0 && kv_heads > 0 && heads % kv_heads == 0, "cudalab.", op,
                    ": heads and kv_heads must be >= 1 with heads a multiple of kv_heads, got ", heads, " and ",
                    kv_heads);
  const std::int64_t columns = heads + 2 * kv_heads;
  TORCH_CHECK_VALUE(qkv.size(2) % columns == 0 && qkv.size(2) > 0, "cudalab.", op, ": qkv's last dimension (",
                    qkv.size(2), ") must be (heads + 2 kv_heads) = ", columns, " times a head_dim >= 1");
  check_like_q(op, "qkv", qkv, qkv);
  const std::int64_t head_dim = qkv.size(2) / columns;
  Packed packed{{AttentionDims{qkv.size(0), heads, kv_heads, qkv.size(1), head_dim},
                 checked_options(op, scale, causal, window_left, window_right)},
                heads * head_dim,
                (heads + kv_heads) * head_dim};
  AttentionOptions& options = packed.problem.options;
  const AttentionStrides strides{qkv.stride(0), head_dim, qkv.stride(1)};
  options.layout.q = options.layout.k = options.layout.v = strides;
  return packed;
}

// o or do of a packed call: [batch, seq, heads * head_dim], rows contiguous.
void check_packed_rows(const char* op, const char* name, const at::Tensor& t, const at::Tensor& qkv,
                       const AttentionDims& d) {
  check_like_q(op, name, t, qkv);
  TORCH_CHECK_VALUE(t.dim() == 3 && t.size(0) == d.batch && t.size(1) == d.seq && t.size(2) == d.heads * d.head_dim,
                    "cudalab.", op, ": ", name, " must be [batch, seq, heads * head_dim] = [", d.batch, ", ", d.seq,
                    ", ", d.heads * d.head_dim, "], got ", t.sizes());
}

// The strides of o or do of a packed call (rows of heads * head_dim, head h at h * head_dim).
AttentionStrides packed_row_strides(const at::Tensor& t, const AttentionDims& d) {
  return {t.stride(0), d.head_dim, t.stride(1)};
}

std::tuple<at::Tensor, at::Tensor> attention_packed(const at::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads,
                                                    const c10::optional<double>& scale, bool causal,
                                                    std::int64_t window_left, std::int64_t window_right) {
  constexpr const char* op = "attention_packed";
  Packed packed = checked_packed(op, qkv, heads, kv_heads, scale, causal, window_left, window_right);
  const AttentionDims& d = packed.problem.dims;
  const c10::cuda::CUDAGuard guard(qkv.device());
  at::Tensor o = at::empty({d.batch, d.seq, d.heads * d.head_dim}, qkv.options());
  at::Tensor lse = at::empty({d.batch, d.heads, d.seq}, qkv.options().dtype(at::kFloat));
  packed.problem.options.layout.o = packed_row_strides(o, d);
  with_element_type<AttentionElements>(qkv, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      const T* q = data<T>(qkv);
      cudalab::attention_forward(q, q + packed.k_at, q + packed.v_at, mutable_data<T>(o), lse.mutable_data_ptr<float>(),
                                 d, packed.problem.options, current_stream(qkv));
    });
  });
  return {o, lse};
}

at::Tensor attention_packed_backward(const at::Tensor& qkv, const at::Tensor& o, const at::Tensor& lse,
                                     const at::Tensor& d_o, std::int64_t heads, std::int64_t kv_heads,
                                     const c10::optional<double>& scale, bool causal, std::int64_t window_left,
                                     std::int64_t window_right) {
  constexpr const char* op = "attention_packed_backward";
  Packed packed = checked_packed(op, qkv, heads, kv_heads, scale, causal, window_left, window_right);
  const AttentionDims& d = packed.problem.dims;
  check_packed_rows(op, "o", o, qkv, d);
  check_packed_rows(op, "do", d_o, qkv, d);
  check_statistics(op, "lse", lse, qkv.device(), d.batch * d.heads * d.seq);
  const c10::cuda::CUDAGuard guard(qkv.device());
  at::Tensor dqkv = at::empty(qkv.sizes(), qkv.options());
  AttentionLayout& layout = packed.problem.options.layout;
  layout.o = packed_row_strides(o, d), layout.d_o = packed_row_strides(d_o, d);
  layout.dq = layout.dk = layout.dv = AttentionStrides{dqkv.stride(0), d.head_dim, dqkv.stride(1)};
  const std::size_t element = qkv.element_size();
  const auto* q = static_cast<const unsigned char*>(qkv.const_data_ptr());
  auto* dq = static_cast<unsigned char*>(dqkv.mutable_data_ptr());
  run_backward(op, qkv, q + packed.k_at * element, q + packed.v_at * element, o, lse, d_o, dqkv,
               dq + packed.k_at * element, dq + packed.v_at * element, packed.problem);
  return dqkv;
}

}  // namespace

// An int32 tensor on q's device, contiguous, of `sizes`' rank with the sizes given (-1: any).
void check_indices(const char* op, const char* name, const at::Tensor& t, const at::Tensor& q,
                   std::initializer_list<std::int64_t> sizes, const char* shape) {
  TORCH_CHECK(t.is_cuda() && t.device() == q.device(), "cudalab.", op, ": ", name, " must be a CUDA tensor on ",
              q.device(), ", got ", t.device());
  TORCH_CHECK_TYPE(t.scalar_type() == at::kInt, "cudalab.", op, ": ", name, " must be int32, got ", t.scalar_type());
  bool fits = t.dim() == static_cast<std::int64_t>(sizes.size()) && t.is_contiguous();
  std::int64_t d = 0;
  for (const std::int64_t size : sizes) fits = fits && (size < 0 || (d < t.dim() && t.size(d) == size)), ++d;
  TORCH_CHECK_VALUE(fits, "cudalab.", op, ": ", name, " must be contiguous ", shape, ", got ", t.sizes());
}

// Decode: q [batch, heads, tokens, head_dim] against caches [batch, kv_heads, cache, head_dim] of
// cache_seqlens[b] valid rows each (int32 [batch]), all contiguous (a static cache is passed whole,
// with its lengths); or, with block_table (int32 [batch, pages a sequence]), against paged caches
// [pages, kv_heads, page_size, head_dim]. o like q and lse [batch, heads, tokens]. Inference only:
// no autograd.
std::tuple<at::Tensor, at::Tensor> attention_decode(const at::Tensor& q, const at::Tensor& k_cache,
                                                    const at::Tensor& v_cache, const at::Tensor& cache_seqlens,
                                                    const c10::optional<double>& scale, bool causal,
                                                    const c10::optional<at::Tensor>& block_table,
                                                    std::int64_t window_left, std::int64_t window_right) {
  constexpr const char* op = "attention_decode";
  check_strided_tensor(op, "q", q, q.device(), c10::nullopt, scalar_types(AttentionElements{}));
  TORCH_CHECK_VALUE(q.dim() == 4, "cudalab.", op, ": q must be [batch, heads, tokens, head_dim], got ", q.sizes());
  const bool paged = block_table.has_value();
  const char* layout = paged ? " must be [pages, kv_heads, page_size, head_dim] with q's head_dim "
                             : " must be [batch, kv_heads, cache, head_dim] with q's batch and head_dim ";
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor&>{"k_cache", k_cache}, {"v_cache", v_cache}}) {
    check_like_q(op, name, t, q);
    TORCH_CHECK_VALUE(t.dim() == 4 && (paged || t.size(0) == q.size(0)) && t.size(3) == q.size(3), "cudalab.", op, ": ",
                      name, layout, q.sizes(), ", got ", t.sizes());
    TORCH_CHECK_VALUE(t.is_contiguous(), "cudalab.", op, ": ", name,
                      " must be contiguous (pass a preallocated cache whole, with cache_seqlens), got strides ",
                      t.strides());
  }
  TORCH_CHECK_VALUE(v_cache.sizes() == k_cache.sizes(), "cudalab.", op, ": v_cache must have k_cache's shape ",
                    k_cache.sizes(), ", got ", v_cache.sizes());
  TORCH_CHECK_VALUE(q.is_contiguous(), "cudalab.", op, ": q must be contiguous, got strides ", q.strides());
  check_indices(op, "cache_seqlens", cache_seqlens, q, {q.size(0)}, "[batch]");
  if (paged) check_indices(op, "block_table", *block_table, q, {q.size(0), -1}, "[batch, pages a sequence]");
  const std::int64_t heads = q.size(1), kv_heads = k_cache.size(1), page_size = k_cache.size(2);
  const std::int64_t cache = paged ? block_table->size(1) * page_size : k_cache.size(2);
  TORCH_CHECK_VALUE(kv_heads > 0 ? heads % kv_heads == 0 : heads == 0, "cudalab.", op, ": q's heads (", heads,
                    ") must be a multiple of the caches' heads (", kv_heads, ")");
  TORCH_CHECK_VALUE(q.size(2) <= cache, "cudalab.", op, ": q's tokens (", q.size(2),
                    ") must be at most the cache's length (", cache, "): the new tokens' keys are in it");
  const AttentionOptions options = checked_options(op, scale, causal, window_left, window_right);
  const AttentionDecodeDims dims{q.size(0), heads, kv_heads, q.size(2), cache, q.size(3)};
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor o = at::empty(q.sizes(), q.options());
  at::Tensor lse = at::empty(q.sizes().slice(0, 3), q.options().dtype(at::kFloat));
  with_element_type<AttentionElements>(q, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      // The scratch from torch's caching allocator: reused across calls, and a CUDA graph's pool
      // while one is captured.
      const std::size_t bytes = attention_decode_workspace_bytes(dims, dtype_of_v<T>, paged ? page_size : 0);
      at::Tensor scratch = workspace(q, bytes);
      const std::int32_t* lengths = cache_seqlens.const_data_ptr<std::int32_t>();
      if (paged) {
        const AttentionDecodePages pages{block_table->const_data_ptr<std::int32_t>(), page_size, k_cache.size(0)};
        cudalab::attention_decode_paged(data<T>(q), data<T>(k_cache), data<T>(v_cache), pages, lengths,
                                        mutable_data<T>(o), lse.mutable_data_ptr<float>(), dims, options,
                                        scratch.mutable_data_ptr(), bytes, current_stream(q));
      } else {
        cudalab::attention_decode(data<T>(q), data<T>(k_cache), data<T>(v_cache), lengths, mutable_data<T>(o),
                                  lse.mutable_data_ptr<float>(), dims, options, scratch.mutable_data_ptr(), bytes,
                                  current_stream(q));
      }
    });
  });
  return {o, lse};
}

// ---- Variable-length batches: q [total_q, heads, head_dim] and k, v [total_k, kv_heads, head_dim],
// head_dim contiguous and any head and row strides (a packed projection's views cost no copy);
// cu_seqlens_q and cu_seqlens_k int32 [sequences + 1] on q's device; o [total_q, heads, head_dim]
// and lse [heads, total_q] fp32, as FlashAttention's varlen functions take and give them. bf16 and
// fp16 only: the library runs them on the Hopper kernels alone.
using VarlenElements = TypeList<__nv_bfloat16, __half>;

struct VarlenProblem {
  AttentionVarlenDims dims;
  AttentionOptions options;
};

// Where a [total, heads, head_dim] tensor's rows lie, for the library: the default where it is
// contiguous, else its head and row strides (8 for a dimension of size 1, which reaches nothing).
AttentionStrides varlen_strides_of(const at::Tensor& t) {
  if (t.is_contiguous()) return {};
  const auto stride = [&](int dim) { return t.size(dim) == 1 ? std::int64_t{8} : t.stride(dim); };
  return {0, stride(1), stride(0)};
}

VarlenProblem checked_varlen(const char* op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const at::Tensor& cu_seqlens_q, const at::Tensor& cu_seqlens_k, std::int64_t max_seqlen_q,
                             std::int64_t max_seqlen_k, const c10::optional<double>& scale, bool causal,
                             std::int64_t window_left, std::int64_t window_right) {
  check_strided_tensor(op, "q", q, q.device(), c10::nullopt, scalar_types(VarlenElements{}));
  TORCH_CHECK_VALUE(q.dim() == 3, "cudalab.", op, ": q must be [total_q, heads, head_dim], got ", q.sizes());
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor&>{"k", k}, {"v", v}}) {
    check_like_q(op, name, t, q);
    TORCH_CHECK_VALUE(t.dim() == 3 && t.size(2) == q.size(2), "cudalab.", op, ": ", name,
                      " must be [total_k, kv_heads, head_dim] with q's head_dim ", q.size(2), ", got ", t.sizes());
  }
  check_like_q(op, "q", q, q);
  TORCH_CHECK_VALUE(v.sizes() == k.sizes(), "cudalab.", op, ": v must have k's shape ", k.sizes(), ", got ", v.sizes());
  const std::int64_t sequences = cu_seqlens_q.dim() == 1 ? cu_seqlens_q.size(0) - 1 : -1;
  check_indices(op, "cu_seqlens_q", cu_seqlens_q, q, {-1}, "[sequences + 1]");
  TORCH_CHECK_VALUE(sequences >= 0, "cudalab.", op, ": cu_seqlens_q must hold sequences + 1 >= 1 entries, got ",
                    cu_seqlens_q.sizes());
  check_indices(op, "cu_seqlens_k", cu_seqlens_k, q, {sequences + 1}, "[sequences + 1] like cu_seqlens_q");
  const std::int64_t heads = q.size(1), kv_heads = k.size(1);
  TORCH_CHECK_VALUE(kv_heads > 0 ? heads % kv_heads == 0 : heads == 0, "cudalab.", op, ": q's heads (", heads,
                    ") must be a multiple of k and v's heads (", kv_heads, ")");
  TORCH_CHECK_VALUE(max_seqlen_q >= 0 && max_seqlen_k >= 0, "cudalab.", op,
                    ": max_seqlen_q and max_seqlen_k must be >= 0, got ", max_seqlen_q, " and ", max_seqlen_k);
  VarlenProblem p{{sequences, heads, kv_heads, q.size(0), k.size(0), max_seqlen_q, max_seqlen_k, q.size(2)},
                  checked_options(op, scale, causal, window_left, window_right)};
  p.options.layout.q = varlen_strides_of(q), p.options.layout.k = varlen_strides_of(k);
  p.options.layout.v = varlen_strides_of(v);
  return p;
}

std::tuple<at::Tensor, at::Tensor> attention_varlen(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                    const at::Tensor& cu_seqlens_q, const at::Tensor& cu_seqlens_k,
                                                    std::int64_t max_seqlen_q, std::int64_t max_seqlen_k,
                                                    const c10::optional<double>& scale, bool causal,
                                                    std::int64_t window_left, std::int64_t window_right) {
  constexpr const char* op = "attention_varlen";
  VarlenProblem p = checked_varlen(op, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, causal,
                                   window_left, window_right);
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor o = at::empty(q.sizes(), q.options());
  at::Tensor lse = at::empty({q.size(1), q.size(0)}, q.options().dtype(at::kFloat));
  with_element_type<VarlenElements>(q, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::attention_forward_varlen(data<T>(q), data<T>(k), data<T>(v), cu_seqlens_q.const_data_ptr<std::int32_t>(),
                                        cu_seqlens_k.const_data_ptr<std::int32_t>(), mutable_data<T>(o),
                                        lse.mutable_data_ptr<float>(), p.dims, p.options, current_stream(q));
    });
  });
  return {o, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> attention_varlen_backward(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o, const at::Tensor& lse,
    const at::Tensor& d_o, const at::Tensor& cu_seqlens_q, const at::Tensor& cu_seqlens_k, std::int64_t max_seqlen_q,
    std::int64_t max_seqlen_k, const c10::optional<double>& scale, bool causal, std::int64_t window_left,
    std::int64_t window_right) {
  constexpr const char* op = "attention_varlen_backward";
  VarlenProblem p = checked_varlen(op, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, causal,
                                   window_left, window_right);
  check_like_q(op, "o", o, q);
  check_same_shape(op, "o", o, "q", q);
  check_like_q(op, "do", d_o, q);
  check_same_shape(op, "do", d_o, "q", q);
  check_statistics(op, "lse", lse, q.device(), q.size(0) * q.size(1));
  TORCH_CHECK_VALUE(lse.dim() == 2 && lse.size(0) == q.size(1), "cudalab.", op, ": lse must be [heads, total_q] = [",
                    q.size(1), ", ", q.size(0), "], got ", lse.sizes());
  // Its dQ is summed in no fixed order: torch.use_deterministic_algorithms(True) refuses it (or warns).
  at::globalContext().alertNotDeterministic("cudalab.attention_varlen_backward");
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor dq = at::empty(q.sizes(), q.options()), dk = at::empty(k.sizes(), k.options()),
             dv = at::empty(v.sizes(), v.options());
  p.options.layout.o = varlen_strides_of(o), p.options.layout.d_o = varlen_strides_of(d_o);
  with_element_type<VarlenElements>(q, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      const std::size_t bytes = attention_backward_varlen_workspace_bytes(p.dims, dtype_of_v<T>);
      at::Tensor scratch = workspace(q, bytes);
      cudalab::attention_backward_varlen(data<T>(q), data<T>(k), data<T>(v), data<T>(o), lse.const_data_ptr<float>(),
                                         data<T>(d_o), cu_seqlens_q.const_data_ptr<std::int32_t>(),
                                         cu_seqlens_k.const_data_ptr<std::int32_t>(), mutable_data<T>(dq),
                                         mutable_data<T>(dk), mutable_data<T>(dv), p.dims, p.options,
                                         scratch.mutable_data_ptr(), bytes, current_stream(q));
    });
  });
  return {dq, dk, dv};
}

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(m,
            "attention_varlen(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, Tensor cu_seqlens_k, int "
            "max_seqlen_q, int max_seqlen_k, float? scale=None, bool causal=False, int window_left=-1, int "
            "window_right=-1) -> (Tensor, Tensor)",
            &attention_varlen, VarlenElements{});
  define_op(m,
            "attention_varlen_backward(Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, Tensor do, Tensor "
            "cu_seqlens_q, Tensor cu_seqlens_k, int max_seqlen_q, int max_seqlen_k, float? scale=None, bool "
            "causal=False, int window_left=-1, int window_right=-1) -> (Tensor, Tensor, Tensor)",
            &attention_varlen_backward, VarlenElements{});
  define_op(m,
            "attention_decode(Tensor q, Tensor k_cache, Tensor v_cache, Tensor cache_seqlens, float? scale=None, bool "
            "causal=True, Tensor? block_table=None, int window_left=-1, int window_right=-1) -> (Tensor, Tensor)",
            &attention_decode, AttentionElements{});
  define_op(m,
            "attention(Tensor q, Tensor k, Tensor v, float? scale=None, bool causal=False, int window_left=-1, int "
            "window_right=-1) -> (Tensor, Tensor)",
            &attention, AttentionElements{});
  define_op(m,
            "attention_backward(Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, Tensor do, float? scale=None, bool "
            "causal=False, int window_left=-1, int window_right=-1) -> (Tensor, Tensor, Tensor)",
            &attention_backward, AttentionElements{});
  define_op(m,
            "attention_packed(Tensor qkv, int heads, int kv_heads, float? scale=None, bool causal=False, int "
            "window_left=-1, int window_right=-1) -> (Tensor, Tensor)",
            &attention_packed, AttentionElements{});
  define_op(m,
            "attention_packed_backward(Tensor qkv, Tensor o, Tensor lse, Tensor do, int heads, int kv_heads, float? "
            "scale=None, bool causal=False, int window_left=-1, int window_right=-1) -> Tensor",
            &attention_packed_backward, AttentionElements{});
}

}  // namespace cudalab::torch_ops
