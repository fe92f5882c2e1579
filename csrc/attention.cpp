// Scaled dot-product attention as torch ops: the forward, O = softmax(scale * Q K^T [causal mask]) V
// and each query row's log-sum-exp, on cudalab::attention_forward; and its backward, dQ, dK and dV
// from dO and the forward's O and L, on cudalab::attention_backward, which ops.py registers as the
// forward's autograd formula. The library takes one sequence length for queries and keys
// (self-attention, or cross-attention over equal lengths), so q, k and v share seq; k and v may
// have fewer heads than q (grouped-query attention).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <tuple>
#include <type_traits>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/attention.hpp"
#include "cudalab/dtype.hpp"

namespace cudalab::torch_ops {
namespace {

// A tensor beside q (k, v, o, do): on q's device, contiguous, of q's dtype.
void check_like_q(const char* op, const char* name, const at::Tensor& t, const at::Tensor& q) {
  check_tensor(op, name, t, q.device());
  TORCH_CHECK_TYPE(t.scalar_type() == q.scalar_type(), "cudalab.", op, ": ", name, " must be ",
                   dtype_names(q.scalar_type()), " like q, got ", dtype_names(t.scalar_type()));
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

struct Problem {
  AttentionDims dims;
  AttentionOptions options;
};

// q, k and v's checks and the library's dims and options for them: what the forward and the
// backward share.
Problem checked_problem(const char* op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        const c10::optional<double>& scale, bool causal) {
  check_tensor(op, "q", q, q.device(), c10::nullopt, scalar_types(AttentionElements{}));
  TORCH_CHECK_VALUE(q.dim() == 4, "cudalab.", op, ": q must be [batch, heads, seq, head_dim], got ", q.sizes());
  check_key_or_value(op, "k", k, q);
  check_key_or_value(op, "v", v, q);
  TORCH_CHECK_VALUE(v.sizes() == k.sizes(), "cudalab.", op, ": v must have k's shape ", k.sizes(), ", got ", v.sizes());
  const std::int64_t heads = q.size(1), kv_heads = k.size(1);
  TORCH_CHECK_VALUE(kv_heads > 0 ? heads % kv_heads == 0 : heads == 0, "cudalab.", op, ": q's heads (", heads,
                    ") must be a multiple of k and v's heads (", kv_heads, ")");
  // The library computes in fp32 and reads a scale of 0 as 1 / sqrt(head_dim): an explicit scale
  // must stay finite and nonzero as a float.
  const float library_scale = scale.has_value() ? static_cast<float>(*scale) : 0.0f;
  TORCH_CHECK_VALUE(!scale.has_value() || (std::isfinite(library_scale) && library_scale > 0.0f), "cudalab.", op,
                    ": scale must be > 0 and finite in float32 (None: 1 / sqrt(head_dim)), got ", *scale);
  // head_dim 0 would leave each row's log-sum-exp, log(its number of keys), unwritten by the library.
  TORCH_CHECK_VALUE(q.size(3) > 0 || q.size(0) * q.size(1) * q.size(2) == 0, "cudalab.", op,
                    ": head_dim must be at least 1, got q ", q.sizes());
  return {AttentionDims{q.size(0), heads, kv_heads, q.size(2), q.size(3)}, AttentionOptions{library_scale, causal}};
}

std::tuple<at::Tensor, at::Tensor> attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                             const c10::optional<double>& scale, bool causal) {
  constexpr const char* op = "attention";
  const Problem p = checked_problem(op, q, k, v, scale, causal);
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor o = at::empty_like(q);
  at::Tensor lse = at::empty(q.sizes().slice(0, 3), q.options().dtype(at::kFloat));
  with_element_type<AttentionElements>(q, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::attention_forward(data<T>(q), data<T>(k), data<T>(v), mutable_data<T>(o), lse.mutable_data_ptr<float>(),
                                 p.dims, p.options, current_stream(q));
    });
  });
  return {o, lse};
}

// O's gradient only: the autograd formula passes no gradient of L (ops.py marks it
// non-differentiable), so dL = 0 and D = rowsum(dO o O), as FlashAttention computes it.
std::tuple<at::Tensor, at::Tensor, at::Tensor> attention_backward(const at::Tensor& q, const at::Tensor& k,
                                                                  const at::Tensor& v, const at::Tensor& o,
                                                                  const at::Tensor& lse, const at::Tensor& d_o,
                                                                  const c10::optional<double>& scale, bool causal) {
  constexpr const char* op = "attention_backward";
  const Problem p = checked_problem(op, q, k, v, scale, causal);
  check_like_q(op, "o", o, q);
  check_same_shape(op, "o", o, "q", q);
  check_like_q(op, "do", d_o, q);
  check_same_shape(op, "do", d_o, "q", q);
  check_statistics(op, "lse", lse, q.device(), p.dims.batch * p.dims.heads * p.dims.seq);
  TORCH_CHECK_VALUE(lse.sizes() == q.sizes().slice(0, 3), "cudalab.", op,
                    ": lse must be [batch, heads, seq] = ", q.sizes().slice(0, 3), ", got ", lse.sizes());
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v);
  // The library's path, and so its scratch, depends on every array being 16-byte aligned (a view
  // into a larger storage may not be).
  bool aligned = true;
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&q, &k, &v, &o, &d_o, &dq, &dk, &dv})
    aligned = aligned && reinterpret_cast<std::uintptr_t>(t->const_data_ptr()) % 16 == 0;
  with_element_type<AttentionElements>(q, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      const std::size_t bytes = cudalab::attention_backward_workspace_bytes(p.dims, dtype_of_v<T>, aligned);
      at::Tensor scratch = workspace(q, bytes);
      cudalab::attention_backward(data<T>(q), data<T>(k), data<T>(v), data<T>(o), lse.const_data_ptr<float>(),
                                  data<T>(d_o), mutable_data<T>(dq), mutable_data<T>(dk), mutable_data<T>(dv), p.dims,
                                  p.options, scratch.mutable_data_ptr(), bytes, current_stream(q));
    });
  });
  return {dq, dk, dv};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(m, "attention(Tensor q, Tensor k, Tensor v, float? scale=None, bool causal=False) -> (Tensor, Tensor)",
            &attention, AttentionElements{});
  define_op(m,
            "attention_backward(Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, Tensor do, float? scale=None, bool "
            "causal=False) -> (Tensor, Tensor, Tensor)",
            &attention_backward, AttentionElements{});
}

}  // namespace cudalab::torch_ops
