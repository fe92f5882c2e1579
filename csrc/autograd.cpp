// The ops' autograd in C++: each differentiable op's forward below autograd, with what its
// backward op needs saved, and its backward through that op. In C++ because a model calls these
// ops hundreds of times a step: Python's autograd path (torch.library.register_autograd) cost
// several times the launch on the host, and an eager step waited on it (docs/models.md). Under
// torch.compile the same functions run on fake tensors, the ops' fake kernels below them.
#include <cstdint>
#include <string>
#include <tuple>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "common.hpp"

namespace cudalab::torch_ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Tensors2 = std::tuple<at::Tensor, at::Tensor>;
using Tensors3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// The op `name` of the cudalab library as a typed dispatcher handle.
template <typename Signature>
c10::TypedOperatorHandle<Signature> op_named(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

// `call` with autograd's dispatch keys skipped: the op's CUDA kernel (or its fake one).
template <typename Call>
auto below_autograd(Call&& call) {
  const at::AutoDispatchBelowADInplaceOrView guard;
  return call();
}

// ---- gemm: out = alpha a op(b) + beta c

using GemmSignature = at::Tensor(const at::Tensor&, const at::Tensor&, const c10::optional<at::Tensor>&, double, double,
                                 bool);

at::Tensor call_gemm(const at::Tensor& a, const at::Tensor& b, double alpha) {
  static const auto op = op_named<GemmSignature>("cudalab::gemm");
  return op.call(a, b, c10::nullopt, alpha, 0.0, false);
}

// t as the kernels read it without a copy: itself where its rows (or, in 16-bit, its columns) are
// contiguous, else a contiguous copy.
at::Tensor operand(const at::Tensor& t, bool fp32) {
  const std::int64_t rows = t.size(-2), cols = t.size(-1), row_step = t.stride(-2), col_step = t.stride(-1);
  if (rows_contiguous(rows, cols, row_step, col_step) || (!fp32 && rows_contiguous(cols, rows, col_step, row_step)))
    return t;
  return t.contiguous();
}

// da = alpha dout op(b)^T; db in b's own shape, alpha a^T dout or, for b given as [n, k], alpha
// dout^T a; dc = beta dout. The transposes are .mT views, which the 16-bit kernels read as they
// lie; the fp32 kernels take rows only, so there they are copied. The backward's products go
// through the dispatcher with autograd, so a create_graph backward differentiates them again.
class Gemm : public torch::autograd::Function<Gemm> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b,
                            const c10::optional<at::Tensor>& c, double alpha, double beta, bool b_transposed) {
    static const auto op = op_named<GemmSignature>("cudalab::gemm");
    ctx->save_for_backward({a, b});
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["beta"] = beta;
    ctx->saved_data["b_transposed"] = b_transposed;
    ctx->saved_data["has_c"] = c.has_value() && c->defined();
    return below_autograd([&] { return op.call(a, b, c, alpha, beta, b_transposed); });
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &a = saved[0], &b = saved[1];
    const double alpha = ctx->saved_data["alpha"].toDouble();
    const bool b_transposed = ctx->saved_data["b_transposed"].toBool();
    const bool fp32 = grads[0].scalar_type() == at::kFloat;
    const at::Tensor dout = operand(grads[0], fp32);
    at::Tensor da, db, dc;
    if (ctx->needs_input_grad(0)) da = call_gemm(dout, operand(b_transposed ? b : b.mT(), fp32), alpha);
    if (ctx->needs_input_grad(1))
      db = b_transposed ? call_gemm(operand(dout.mT(), fp32), a, alpha) : call_gemm(operand(a.mT(), fp32), dout, alpha);
    if (ctx->saved_data["has_c"].toBool() && ctx->needs_input_grad(2)) {
      const double beta = ctx->saved_data["beta"].toDouble();
      dc = beta == 1.0 ? grads[0] : grads[0].mul(beta);  // a bias added through c: no pass
    }
    return {da, db, dc, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& c, double alpha, double beta,
                bool b_transposed) {
  return Gemm::apply(a, b, c, alpha, beta, b_transposed);
}

// ---- layer_norm and rms_norm: the statistics are outputs without gradients

class LayerNorm : public torch::autograd::Function<LayerNorm> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias, double eps) {
    static const auto op =
        op_named<Tensors3(const at::Tensor&, const at::Tensor&, const at::Tensor&, double)>("cudalab::layer_norm");
    auto [y, mean, rstd] = below_autograd([&] { return op.call(x, weight, bias, eps); });
    ctx->save_for_backward({x, weight, mean, rstd});
    ctx->mark_non_differentiable({mean, rstd});
    return {y, mean, rstd};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static const auto op = op_named<Tensors3(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                             const at::Tensor&)>("cudalab::layer_norm_backward");
    const auto s = ctx->get_saved_variables();
    auto [dx, dweight, dbias] = op.call(s[0], grads[0].contiguous(), s[1], s[2], s[3]);
    return {dx, dweight, dbias, at::Tensor()};
  }
};

Tensors3 layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  const auto out = LayerNorm::apply(x, weight, bias, eps);
  return {out[0], out[1], out[2]};
}

class RmsNorm : public torch::autograd::Function<RmsNorm> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, double eps) {
    static const auto op = op_named<Tensors2(const at::Tensor&, const at::Tensor&, double)>("cudalab::rms_norm");
    auto [y, rstd] = below_autograd([&] { return op.call(x, weight, eps); });
    ctx->save_for_backward({x, weight, rstd});
    ctx->mark_non_differentiable({rstd});
    return {y, rstd};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static const auto op =
        op_named<Tensors2(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&)>(
            "cudalab::rms_norm_backward");
    const auto s = ctx->get_saved_variables();
    auto [dx, dweight] = op.call(s[0], grads[0].contiguous(), s[1], s[2]);
    return {dx, dweight, at::Tensor()};
  }
};

Tensors2 rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const auto out = RmsNorm::apply(x, weight, eps);
  return {out[0], out[1]};
}

// ---- bias_act: act(x + bias)

class BiasAct : public torch::autograd::Function<BiasAct> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& bias,
                            c10::string_view activation) {
    static const auto op =
        op_named<at::Tensor(const at::Tensor&, const at::Tensor&, c10::string_view)>("cudalab::bias_act");
    ctx->save_for_backward({x, bias});
    ctx->saved_data["activation"] = std::string(activation);
    return below_autograd([&] { return op.call(x, bias, activation); });
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static const auto op =
        op_named<Tensors2(const at::Tensor&, const at::Tensor&, const at::Tensor&, c10::string_view)>(
            "cudalab::bias_act_backward");
    const auto s = ctx->get_saved_variables();
    const std::string activation = ctx->saved_data["activation"].toStringRef();
    auto [dx, dbias] = op.call(s[0], s[1], grads[0].contiguous(), activation);
    return {dx, dbias, at::Tensor()};
  }
};

at::Tensor bias_act(const at::Tensor& x, const at::Tensor& bias, c10::string_view activation) {
  return BiasAct::apply(x, bias, activation);
}

// ---- swiglu and geglu: y = act(gate) * up, one class for both units

template <const char* kForward, const char* kBackward>
class GatedUnit : public torch::autograd::Function<GatedUnit<kForward, kBackward>> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate, const at::Tensor& up) {
    static const auto op = op_named<at::Tensor(const at::Tensor&, const at::Tensor&)>(kForward);
    ctx->save_for_backward({gate, up});
    return below_autograd([&] { return op.call(gate, up); });
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static const auto op = op_named<Tensors2(const at::Tensor&, const at::Tensor&, const at::Tensor&)>(kBackward);
    const auto s = ctx->get_saved_variables();
    auto [dgate, dup] = op.call(s[0], s[1], grads[0].contiguous());
    return {dgate, dup};
  }
};

constexpr char kSwiglu[] = "cudalab::swiglu", kSwigluBackward[] = "cudalab::swiglu_backward";
constexpr char kGeglu[] = "cudalab::geglu", kGegluBackward[] = "cudalab::geglu_backward";

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  return GatedUnit<kSwiglu, kSwigluBackward>::apply(gate, up);
}
at::Tensor geglu(const at::Tensor& gate, const at::Tensor& up) {
  return GatedUnit<kGeglu, kGegluBackward>::apply(gate, up);
}

// ---- rope: x rotated by the position's angle; its gradient is dy rotated back

using RopeSignature = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, std::int64_t, bool,
                                 std::int64_t);

class Rope : public torch::autograd::Function<Rope> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                            std::int64_t seq_dim, bool interleaved, std::int64_t position_offset) {
    static const auto op = op_named<RopeSignature>("cudalab::rope");
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["seq_dim"] = seq_dim;
    ctx->saved_data["interleaved"] = interleaved;
    ctx->saved_data["position_offset"] = position_offset;
    return below_autograd([&] { return op.call(x, cos, sin, seq_dim, interleaved, position_offset); });
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static const auto op = op_named<RopeSignature>("cudalab::rope_backward");
    const auto s = ctx->get_saved_variables();
    // Contiguous, or the transpose of dimensions 1 and 2 of a contiguous tensor: read as it lies.
    const at::Tensor& dy = grads[0];
    const bool dense = dy.is_contiguous() || (dy.dim() >= 3 && dy.transpose(1, 2).is_contiguous());
    const at::Tensor dx = op.call(dense ? dy : dy.contiguous(), s[0], s[1], ctx->saved_data["seq_dim"].toInt(),
                                  ctx->saved_data["interleaved"].toBool(), ctx->saved_data["position_offset"].toInt());
    return {dx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t seq_dim,
                bool interleaved, std::int64_t position_offset) {
  return Rope::apply(x, cos, sin, seq_dim, interleaved, position_offset);
}

// ---- attention: (o, lse); lse has no gradient, so o's is the whole of it (as FlashAttention's)

class Attention : public torch::autograd::Function<Attention> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const c10::optional<double>& scale, bool causal) {
    static const auto op =
        op_named<Tensors2(const at::Tensor&, const at::Tensor&, const at::Tensor&, const c10::optional<double>&, bool)>(
            "cudalab::attention");
    auto [o, lse] = below_autograd([&] { return op.call(q, k, v, scale, causal); });
    ctx->save_for_backward({q, k, v, o, lse});
    ctx->mark_non_differentiable({lse});
    ctx->saved_data["scale"] = scale.has_value() ? c10::IValue(*scale) : c10::IValue();
    ctx->saved_data["causal"] = causal;
    return {o, lse};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static const auto op =
        op_named<Tensors3(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                          const at::Tensor&, const c10::optional<double>&, bool)>("cudalab::attention_backward");
    const auto s = ctx->get_saved_variables();
    const c10::IValue& scale = ctx->saved_data["scale"];
    auto [dq, dk, dv] = op.call(s[0], s[1], s[2], s[3], s[4], grads[0].contiguous(),
                                scale.isNone() ? c10::nullopt : c10::optional<double>(scale.toDouble()),
                                ctx->saved_data["causal"].toBool());
    return {dq, dk, dv, at::Tensor(), at::Tensor()};
  }
};

Tensors2 attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<double>& scale,
                   bool causal) {
  const auto out = Attention::apply(q, k, v, scale, causal);
  return {out[0], out[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(cudalab, Autograd, m) {
  m.impl("gemm", &gemm);
  m.impl("layer_norm", &layer_norm);
  m.impl("rms_norm", &rms_norm);
  m.impl("bias_act", &bias_act);
  m.impl("swiglu", &swiglu);
  m.impl("geglu", &geglu);
  m.impl("attention", &attention);
  m.impl("rope", &rope);
}

}  // namespace cudalab::torch_ops
