// Scaled dot-product attention's forward as a torch op: O = softmax(scale * Q K^T [causal mask]) V
// and each query row's log-sum-exp, on cudalab::attention_forward. The library takes one sequence
// length for queries and keys (self-attention, or cross-attention over equal lengths), so q, k and
// v share seq; k and v may have fewer heads than q (grouped-query attention). There is no backward
// yet: ops.py registers an autograd formula that raises, so a backward fails by name.
#include <cmath>
#include <type_traits>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/attention.hpp"

namespace cudalab::torch_ops {
namespace {

// k or v: [batch, kv_heads, seq, head_dim] with q's batch, seq and head_dim, and q's dtype.
void check_key_or_value(const char* name, const at::Tensor& t, const at::Tensor& q) {
  constexpr const char* op = "attention";
  check_tensor(op, name, t, q.device());
  TORCH_CHECK_TYPE(t.scalar_type() == q.scalar_type(), "cudalab.attention: ", name, " must be ",
                   dtype_names(q.scalar_type()), " like q, got ", dtype_names(t.scalar_type()));
  TORCH_CHECK_VALUE(t.dim() == 4, "cudalab.attention: ", name, " must be [batch, kv_heads, seq, head_dim], got ",
                    t.sizes());
  TORCH_CHECK_VALUE(t.size(0) == q.size(0), "cudalab.attention: ", name, " must have q's batch ", q.size(0), ", got ",
                    t.sizes());
  TORCH_CHECK_VALUE(t.size(2) == q.size(2), "cudalab.attention: ", name, " must have q's seq ", q.size(2),
                    " (the library takes one sequence length for queries and keys), got ", t.sizes());
  TORCH_CHECK_VALUE(t.size(3) == q.size(3), "cudalab.attention: ", name, " must have q's head_dim ", q.size(3),
                    ", got ", t.sizes());
}

std::tuple<at::Tensor, at::Tensor> attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                             const c10::optional<double>& scale, bool causal) {
  constexpr const char* op = "attention";
  check_tensor(op, "q", q, q.device());
  TORCH_CHECK_VALUE(q.dim() == 4, "cudalab.attention: q must be [batch, heads, seq, head_dim], got ", q.sizes());
  check_key_or_value("k", k, q);
  check_key_or_value("v", v, q);
  TORCH_CHECK_VALUE(v.sizes() == k.sizes(), "cudalab.attention: v must have k's shape ", k.sizes(), ", got ",
                    v.sizes());
  const std::int64_t heads = q.size(1), kv_heads = k.size(1);
  TORCH_CHECK_VALUE(kv_heads > 0 ? heads % kv_heads == 0 : heads == 0, "cudalab.attention: q's heads (", heads,
                    ") must be a multiple of k and v's heads (", kv_heads, ")");
  // The library computes in fp32 and reads a scale of 0 as 1 / sqrt(head_dim): an explicit scale
  // must stay finite and nonzero as a float.
  const float library_scale = scale.has_value() ? static_cast<float>(*scale) : 0.0f;
  TORCH_CHECK_VALUE(!scale.has_value() || (std::isfinite(library_scale) && library_scale > 0.0f),
                    "cudalab.attention: scale must be > 0 and finite in float32 (None: 1 / sqrt(head_dim)), got ",
                    *scale);
  // head_dim 0 would leave each row's log-sum-exp, log(its number of keys), unwritten by the library.
  TORCH_CHECK_VALUE(q.size(3) > 0 || q.size(0) * q.size(1) * q.size(2) == 0,
                    "cudalab.attention: head_dim must be at least 1, got q ", q.sizes());
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor o = at::empty_like(q);
  at::Tensor lse = at::empty(q.sizes().slice(0, 3), q.options().dtype(at::kFloat));
  const AttentionDims dims{q.size(0), heads, kv_heads, q.size(2), q.size(3)};
  const AttentionOptions options{library_scale, causal};
  with_element_type(q, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::attention_forward(data<T>(q), data<T>(k), data<T>(v), mutable_data<T>(o), lse.mutable_data_ptr<float>(),
                                 dims, options, current_stream(q));
    });
  });
  return {o, lse};
}

}  // namespace

TORCH_LIBRARY_IMPL(cudalab, CUDA, m) { m.impl("attention", &attention); }

}  // namespace cudalab::torch_ops
