// The ops' autograd in C++: each differentiable op's forward below autograd, with what its
// backward op needs saved, and its backward through that op. In C++ because a model calls these
// ops hundreds of times a step: Python's autograd path (torch.library.register_autograd) cost
// several times the launch on the host, and an eager step waited on it (docs/models.md). Under
// torch.compile the same functions run on fake tensors, the ops' fake kernels below them; sizes
// and strides are read as SymInts, so a dynamic shape stays dynamic. Where no gradient is wanted
// the op runs below autograd directly. Only the GEMM has a second derivative: the other backward
// ops have none, so their backward refuses a create_graph pass (it would give zeros). torch.func's
// transforms do not take C++ autograd functions.
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

// Whether autograd records anything for these inputs.
template <typename... Tensors>
bool wants_gradient(const Tensors&... tensors) {
  return at::GradMode::is_enabled() && (tensors.requires_grad() || ...);
}

// The backward ops have no gradient of their own: a create_graph backward would get zeros.
void refuse_second_derivative(const char* op) {
  TORCH_CHECK(!at::GradMode::is_enabled(), "cudalab.", op,
              ": no second derivative (its backward op has none); call backward without create_graph");
}

// An output's gradient, or zeros of its shape where autograd passes none: the norms and attention
// below turn off autograd's zero-filling of missing gradients (set_materialize_grads), which cost
// an allocation and a fill kernel for each saved statistic (mean, rstd, lse) in every backward,
// and fill here only for an output that is used and has no gradient (the residual stream's end).
at::Tensor gradient_or_zeros(const at::Tensor& gradient, const at::Tensor& output) {
  return gradient.defined() ? gradient : at::zeros_like(output);
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
  const c10::SymInt &rows = t.sym_size(-2), &cols = t.sym_size(-1);
  const c10::SymInt &row_step = t.sym_stride(-2), &col_step = t.sym_stride(-1);
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
    ctx->saved_data["c_row"] = c.has_value() && c->defined() && c->dim() == 1;
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
    const bool bias_row =
        ctx->saved_data["has_c"].toBool() && ctx->saved_data["c_row"].toBool() && ctx->needs_input_grad(2);
    // A Linear's weight gradient and its bias's in one product (the bias's sums over the tokens,
    // the weight gradient's k), in 16-bit outside a create_graph pass.
    // Dense operands only: the call takes them so, and a copy would cost more than the pass.
    const bool with_bias_sums = bias_row && b_transposed && ctx->needs_input_grad(1) && !at::GradMode::is_enabled() &&
                                grads[0].dim() == 2 && a.dim() == 2 && grads[0].is_contiguous() && a.is_contiguous() &&
                                (grads[0].scalar_type() == at::kBFloat16 || grads[0].scalar_type() == at::kHalf);
    at::Tensor bias_sums;
    if (with_bias_sums) {
      static const auto op =
          op_named<Tensors2(const at::Tensor&, const at::Tensor&, double)>("cudalab::gemm_weight_gradient");
      std::tie(db, bias_sums) = op.call(grads[0], a, alpha);
    } else if (ctx->needs_input_grad(1)) {
      db = b_transposed ? call_gemm(operand(dout.mT(), fp32), a, alpha) : call_gemm(operand(a.mT(), fp32), dout, alpha);
    }
    if (ctx->saved_data["has_c"].toBool() && ctx->needs_input_grad(2)) {
      const double beta = ctx->saved_data["beta"].toDouble();
      if (ctx->saved_data["c_row"].toBool()) {
        // A row broadcast over the output's rows (a bias): the column sums of dout, from the weight
        // gradient's product above or by cudalab's kernel; a create_graph pass sums with torch,
        // whose sum has a derivative.
        static const auto sum_op = op_named<at::Tensor(const at::Tensor&)>("cudalab::bias_gradient");
        dc = with_bias_sums               ? bias_sums
             : at::GradMode::is_enabled() ? grads[0].reshape({-1, grads[0].size(-1)}).sum(0)
                                          : sum_op.call(grads[0].contiguous());
        if (beta != 1.0) dc = dc.mul(beta);
      } else {
        dc = beta == 1.0 ? grads[0] : grads[0].mul(beta);  // c of the output's shape: no pass
      }
    }
    return {da, db, dc, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& c, double alpha, double beta,
                bool b_transposed) {
  const bool c_requires_grad = c.has_value() && c->defined() && c->requires_grad();
  if (!at::GradMode::is_enabled() || !(a.requires_grad() || b.requires_grad() || c_requires_grad)) {
    static const auto op = op_named<GemmSignature>("cudalab::gemm");
    return below_autograd([&] { return op.call(a, b, c, alpha, beta, b_transposed); });
  }
  return Gemm::apply(a, b, c, alpha, beta, b_transposed);
}

// ---- layer_norm and rms_norm: the statistics leave the node detached (outputs without
// gradients; marking them non-differentiable would stop compiled autograd)

using LayerNormSignature = Tensors3(const at::Tensor&, const at::Tensor&, const at::Tensor&, double);

class LayerNorm : public torch::autograd::Function<LayerNorm> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias, double eps) {
    static const auto op = op_named<LayerNormSignature>("cudalab::layer_norm");
    ctx->set_materialize_grads(false);
    auto [y, mean, rstd] = below_autograd([&] { return op.call(x, weight, bias, eps); });
    ctx->save_for_backward({x, weight, mean, rstd});
    return {y, mean, rstd};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative("layer_norm");
    static const auto op = op_named<Tensors3(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                             const at::Tensor&)>("cudalab::layer_norm_backward");
    const auto s = ctx->get_saved_variables();
    const at::Tensor dy = gradient_or_zeros(grads[0], s[0]).contiguous();
    auto [dx, dweight, dbias] = op.call(s[0], dy, s[1], s[2], s[3]);
    return {dx, dweight, dbias, at::Tensor()};
  }
};

Tensors3 layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  if (!wants_gradient(x, weight, bias)) {
    static const auto op = op_named<LayerNormSignature>("cudalab::layer_norm");
    return below_autograd([&] { return op.call(x, weight, bias, eps); });
  }
  const auto out = LayerNorm::apply(x, weight, bias, eps);
  return {out[0], out[1].detach(), out[2].detach()};
}

using RmsNormSignature = Tensors2(const at::Tensor&, const at::Tensor&, double);

class RmsNorm : public torch::autograd::Function<RmsNorm> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, double eps) {
    static const auto op = op_named<RmsNormSignature>("cudalab::rms_norm");
    ctx->set_materialize_grads(false);
    auto [y, rstd] = below_autograd([&] { return op.call(x, weight, eps); });
    ctx->save_for_backward({x, weight, rstd});
    return {y, rstd};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative("rms_norm");
    static const auto op =
        op_named<Tensors2(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&)>(
            "cudalab::rms_norm_backward");
    const auto s = ctx->get_saved_variables();
    const at::Tensor dy = gradient_or_zeros(grads[0], s[0]).contiguous();
    auto [dx, dweight] = op.call(s[0], dy, s[1], s[2]);
    return {dx, dweight, at::Tensor()};
  }
};

Tensors2 rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (!wants_gradient(x, weight)) {
    static const auto op = op_named<RmsNormSignature>("cudalab::rms_norm");
    return below_autograd([&] { return op.call(x, weight, eps); });
  }
  const auto out = RmsNorm::apply(x, weight, eps);
  return {out[0], out[1].detach()};
}

// ---- add_layer_norm and add_rms_norm: y = norm(h), h = x + residual. h is an output with a
// gradient of its own (the residual stream's); the backward adds it to the norm's, and that sum is
// both x's and the residual's gradient.

using AddLayerNormSignature = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&,
                                                                                         const at::Tensor&,
                                                                                         const at::Tensor&,
                                                                                         const at::Tensor&, double);

class AddLayerNorm : public torch::autograd::Function<AddLayerNorm> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& residual,
                               const at::Tensor& weight, const at::Tensor& bias, double eps) {
    static const auto op = op_named<AddLayerNormSignature>("cudalab::add_layer_norm");
    ctx->set_materialize_grads(false);
    auto [y, h, mean, rstd] = below_autograd([&] { return op.call(x, residual, weight, bias, eps); });
    ctx->save_for_backward({h, weight, mean, rstd});
    return {y, h, mean, rstd};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative("add_layer_norm");
    static const auto op = op_named<Tensors3(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                             const at::Tensor&, const at::Tensor&)>("cudalab::add_layer_norm_backward");
    const auto s = ctx->get_saved_variables();
    const at::Tensor dy = gradient_or_zeros(grads[0], s[0]).contiguous();
    const at::Tensor dh = gradient_or_zeros(grads[1], s[0]).contiguous();
    auto [dx, dweight, dbias] = op.call(s[0], dy, dh, s[1], s[2], s[3]);
    return {dx, dx, dweight, dbias, at::Tensor()};
  }
};

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_layer_norm(const at::Tensor& x,
                                                                          const at::Tensor& residual,
                                                                          const at::Tensor& weight,
                                                                          const at::Tensor& bias, double eps) {
  if (!wants_gradient(x, residual, weight, bias)) {
    static const auto op = op_named<AddLayerNormSignature>("cudalab::add_layer_norm");
    return below_autograd([&] { return op.call(x, residual, weight, bias, eps); });
  }
  const auto out = AddLayerNorm::apply(x, residual, weight, bias, eps);
  return {out[0], out[1], out[2].detach(), out[3].detach()};
}

using AddRmsNormSignature = Tensors3(const at::Tensor&, const at::Tensor&, const at::Tensor&, double);

class AddRmsNorm : public torch::autograd::Function<AddRmsNorm> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& residual,
                               const at::Tensor& weight, double eps) {
    static const auto op = op_named<AddRmsNormSignature>("cudalab::add_rms_norm");
    ctx->set_materialize_grads(false);
    auto [y, h, rstd] = below_autograd([&] { return op.call(x, residual, weight, eps); });
    ctx->save_for_backward({h, weight, rstd});
    return {y, h, rstd};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative("add_rms_norm");
    static const auto op = op_named<Tensors2(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                             const at::Tensor&)>("cudalab::add_rms_norm_backward");
    const auto s = ctx->get_saved_variables();
    const at::Tensor dy = gradient_or_zeros(grads[0], s[0]).contiguous();
    const at::Tensor dh = gradient_or_zeros(grads[1], s[0]).contiguous();
    auto [dx, dweight] = op.call(s[0], dy, dh, s[1], s[2]);
    return {dx, dx, dweight, at::Tensor()};
  }
};

Tensors3 add_rms_norm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, double eps) {
  if (!wants_gradient(x, residual, weight)) {
    static const auto op = op_named<AddRmsNormSignature>("cudalab::add_rms_norm");
    return below_autograd([&] { return op.call(x, residual, weight, eps); });
  }
  const auto out = AddRmsNorm::apply(x, residual, weight, eps);
  return {out[0], out[1], out[2].detach()};
}

// ---- bias_act: act(x + bias)

using BiasActSignature = at::Tensor(const at::Tensor&, const at::Tensor&, c10::string_view);

class BiasAct : public torch::autograd::Function<BiasAct> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& bias,
                            c10::string_view activation) {
    static const auto op = op_named<BiasActSignature>("cudalab::bias_act");
    ctx->save_for_backward({x, bias});
    ctx->saved_data["activation"] = std::string(activation);
    return below_autograd([&] { return op.call(x, bias, activation); });
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative("bias_act");
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
  if (!wants_gradient(x, bias)) {
    static const auto op = op_named<BiasActSignature>("cudalab::bias_act");
    return below_autograd([&] { return op.call(x, bias, activation); });
  }
  return BiasAct::apply(x, bias, activation);
}

// ---- swiglu and geglu: y = act(gate) * up, one class for both units

template <const char* kForward, const char* kBackward>
class GatedUnit : public torch::autograd::Function<GatedUnit<kForward, kBackward>> {
 public:
  static at::Tensor run(const at::Tensor& gate, const at::Tensor& up) {
    static const auto op = op_named<at::Tensor(const at::Tensor&, const at::Tensor&)>(kForward);
    return below_autograd([&] { return op.call(gate, up); });
  }

  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate, const at::Tensor& up) {
    ctx->save_for_backward({gate, up});
    return run(gate, up);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative(kForward);
    static const auto op = op_named<Tensors2(const at::Tensor&, const at::Tensor&, const at::Tensor&)>(kBackward);
    const auto s = ctx->get_saved_variables();
    auto [dgate, dup] = op.call(s[0], s[1], grads[0].contiguous());
    return {dgate, dup};
  }

  static at::Tensor apply_or_run(const at::Tensor& gate, const at::Tensor& up) {
    return wants_gradient(gate, up) ? GatedUnit::apply(gate, up) : run(gate, up);
  }
};

constexpr char kSwiglu[] = "cudalab::swiglu", kSwigluBackward[] = "cudalab::swiglu_backward";
constexpr char kGeglu[] = "cudalab::geglu", kGegluBackward[] = "cudalab::geglu_backward";

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  return GatedUnit<kSwiglu, kSwigluBackward>::apply_or_run(gate, up);
}
at::Tensor geglu(const at::Tensor& gate, const at::Tensor& up) {
  return GatedUnit<kGeglu, kGegluBackward>::apply_or_run(gate, up);
}

// ---- swiglu_packed and geglu_packed: the same units on one x [.., 2F]; dx in x's layout

template <const char* kForward, const char* kBackward>
class PackedGatedUnit : public torch::autograd::Function<PackedGatedUnit<kForward, kBackward>> {
 public:
  static at::Tensor run(const at::Tensor& x) {
    static const auto op = op_named<at::Tensor(const at::Tensor&)>(kForward);
    return below_autograd([&] { return op.call(x); });
  }

  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
    ctx->save_for_backward({x});
    return run(x);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative(kForward);
    static const auto op = op_named<at::Tensor(const at::Tensor&, const at::Tensor&)>(kBackward);
    return {op.call(ctx->get_saved_variables()[0], grads[0].contiguous())};
  }

  static at::Tensor apply_or_run(const at::Tensor& x) { return wants_gradient(x) ? PackedGatedUnit::apply(x) : run(x); }
};

constexpr char kSwigluPacked[] = "cudalab::swiglu_packed", kSwigluPackedBackward[] = "cudalab::swiglu_packed_backward";
constexpr char kGegluPacked[] = "cudalab::geglu_packed", kGegluPackedBackward[] = "cudalab::geglu_packed_backward";

at::Tensor swiglu_packed(const at::Tensor& x) {
  return PackedGatedUnit<kSwigluPacked, kSwigluPackedBackward>::apply_or_run(x);
}
at::Tensor geglu_packed(const at::Tensor& x) {
  return PackedGatedUnit<kGegluPacked, kGegluPackedBackward>::apply_or_run(x);
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
    refuse_second_derivative("rope");
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
  if (!wants_gradient(x)) {  // the tables take no gradient
    static const auto op = op_named<RopeSignature>("cudalab::rope");
    return below_autograd([&] { return op.call(x, cos, sin, seq_dim, interleaved, position_offset); });
  }
  return Rope::apply(x, cos, sin, seq_dim, interleaved, position_offset);
}

// ---- rope_packed: the q and k heads of a packed q-k-v rotated, the v heads copied

using RopePackedSignature = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, std::int64_t,
                                       std::int64_t, std::int64_t);

class RopePacked : public torch::autograd::Function<RopePacked> {
 public:
  static at::Tensor run(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin, std::int64_t heads,
                        std::int64_t kv_heads, std::int64_t position_offset) {
    static const auto op = op_named<RopePackedSignature>("cudalab::rope_packed");
    return below_autograd([&] { return op.call(qkv, cos, sin, heads, kv_heads, position_offset); });
  }

  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                            std::int64_t heads, std::int64_t kv_heads, std::int64_t position_offset) {
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["kv_heads"] = kv_heads;
    ctx->saved_data["position_offset"] = position_offset;
    return run(qkv, cos, sin, heads, kv_heads, position_offset);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative("rope_packed");
    static const auto op = op_named<RopePackedSignature>("cudalab::rope_packed_backward");
    const auto s = ctx->get_saved_variables();
    const at::Tensor dqkv = op.call(grads[0].contiguous(), s[0], s[1], ctx->saved_data["heads"].toInt(),
                                    ctx->saved_data["kv_heads"].toInt(), ctx->saved_data["position_offset"].toInt());
    return {dqkv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor rope_packed(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin, std::int64_t heads,
                       std::int64_t kv_heads, std::int64_t position_offset) {
  if (!wants_gradient(qkv)) return RopePacked::run(qkv, cos, sin, heads, kv_heads, position_offset);
  return RopePacked::apply(qkv, cos, sin, heads, kv_heads, position_offset);
}

// ---- attention: (o, lse); lse leaves the node detached, so o's gradient is the whole of it (as
// FlashAttention's)

// The mask every attention op takes after its scale: causal, and a sliding window's sides.
struct AttentionMask {
  bool causal;
  std::int64_t window_left, window_right;

  void save(AutogradContext* ctx, const c10::optional<double>& scale) const {
    ctx->saved_data["scale"] = scale.has_value() ? c10::IValue(*scale) : c10::IValue();
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["window_left"] = window_left;
    ctx->saved_data["window_right"] = window_right;
  }
  static AttentionMask saved(AutogradContext* ctx) {
    return {ctx->saved_data["causal"].toBool(), ctx->saved_data["window_left"].toInt(),
            ctx->saved_data["window_right"].toInt()};
  }
};

c10::optional<double> saved_scale(AutogradContext* ctx) {
  const c10::IValue& scale = ctx->saved_data["scale"];
  return scale.isNone() ? c10::nullopt : c10::optional<double>(scale.toDouble());
}

using AttentionSignature = Tensors2(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    const c10::optional<double>&, bool, std::int64_t, std::int64_t);

// An incoming gradient as the attention ops read it: itself where its last dimension is
// contiguous (the ops take any other strides), else a copy.
at::Tensor head_dim_contiguous(const at::Tensor& t) {
  return t.sym_size(-1) == 1 || t.sym_stride(-1) == 1 ? t : t.contiguous();
}

class Attention : public torch::autograd::Function<Attention> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const c10::optional<double>& scale, bool causal, std::int64_t window_left,
                               std::int64_t window_right) {
    static const auto op = op_named<AttentionSignature>("cudalab::attention");
    ctx->set_materialize_grads(false);
    auto [o, lse] = below_autograd([&] { return op.call(q, k, v, scale, causal, window_left, window_right); });
    ctx->save_for_backward({q, k, v, o, lse});
    AttentionMask{causal, window_left, window_right}.save(ctx, scale);
    return {o, lse};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative("attention");
    static const auto op =
        op_named<Tensors3(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                          const at::Tensor&, const c10::optional<double>&, bool, std::int64_t, std::int64_t)>(
            "cudalab::attention_backward");
    const auto s = ctx->get_saved_variables();
    const AttentionMask mask = AttentionMask::saved(ctx);
    auto [dq, dk, dv] = op.call(s[0], s[1], s[2], s[3], s[4], head_dim_contiguous(gradient_or_zeros(grads[0], s[3])),
                                saved_scale(ctx), mask.causal, mask.window_left, mask.window_right);
    return {dq, dk, dv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

Tensors2 attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<double>& scale,
                   bool causal, std::int64_t window_left, std::int64_t window_right) {
  if (!wants_gradient(q, k, v)) {
    static const auto op = op_named<AttentionSignature>("cudalab::attention");
    return below_autograd([&] { return op.call(q, k, v, scale, causal, window_left, window_right); });
  }
  const auto out = Attention::apply(q, k, v, scale, causal, window_left, window_right);
  return {out[0], out[1].detach()};
}

// ---- attention_packed: (o, lse) from one qkv tensor; its gradient one tensor of qkv's shape

using AttentionPackedSignature = Tensors2(const at::Tensor&, std::int64_t, std::int64_t, const c10::optional<double>&,
                                          bool, std::int64_t, std::int64_t);

class AttentionPacked : public torch::autograd::Function<AttentionPacked> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads,
                               const c10::optional<double>& scale, bool causal, std::int64_t window_left,
                               std::int64_t window_right) {
    static const auto op = op_named<AttentionPackedSignature>("cudalab::attention_packed");
    ctx->set_materialize_grads(false);
    auto [o, lse] =
        below_autograd([&] { return op.call(qkv, heads, kv_heads, scale, causal, window_left, window_right); });
    ctx->save_for_backward({qkv, o, lse});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["kv_heads"] = kv_heads;
    AttentionMask{causal, window_left, window_right}.save(ctx, scale);
    return {o, lse};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    refuse_second_derivative("attention_packed");
    static const auto op =
        op_named<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, std::int64_t,
                            std::int64_t, const c10::optional<double>&, bool, std::int64_t, std::int64_t)>(
            "cudalab::attention_packed_backward");
    const auto s = ctx->get_saved_variables();
    const AttentionMask mask = AttentionMask::saved(ctx);
    at::Tensor dqkv = op.call(s[0], s[1], s[2], head_dim_contiguous(gradient_or_zeros(grads[0], s[1])),
                              ctx->saved_data["heads"].toInt(), ctx->saved_data["kv_heads"].toInt(), saved_scale(ctx),
                              mask.causal, mask.window_left, mask.window_right);
    return {dqkv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

Tensors2 attention_packed(const at::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads,
                          const c10::optional<double>& scale, bool causal, std::int64_t window_left,
                          std::int64_t window_right) {
  if (!wants_gradient(qkv)) {
    static const auto op = op_named<AttentionPackedSignature>("cudalab::attention_packed");
    return below_autograd([&] { return op.call(qkv, heads, kv_heads, scale, causal, window_left, window_right); });
  }
  const auto out = AttentionPacked::apply(qkv, heads, kv_heads, scale, causal, window_left, window_right);
  return {out[0], out[1].detach()};
}

}  // namespace

TORCH_LIBRARY_IMPL(cudalab, Autograd, m) {
  m.impl("gemm", &gemm);
  m.impl("layer_norm", &layer_norm);
  m.impl("rms_norm", &rms_norm);
  m.impl("add_layer_norm", &add_layer_norm);
  m.impl("add_rms_norm", &add_rms_norm);
  m.impl("bias_act", &bias_act);
  m.impl("swiglu", &swiglu);
  m.impl("geglu", &geglu);
  m.impl("swiglu_packed", &swiglu_packed);
  m.impl("geglu_packed", &geglu_packed);
  m.impl("rope", &rope);
  m.impl("rope_packed", &rope_packed);
  m.impl("attention", &attention);
  m.impl("attention_packed", &attention_packed);
}

}  // namespace cudalab::torch_ops
