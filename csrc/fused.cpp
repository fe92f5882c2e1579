// The fused ops (bias + activation and a bias's gradient, LayerNorm, RMSNorm and their residual-add forms, softmax,
// SwiGLU, GeGLU, forward and backward) on CUDA tensors: checks, outputs from torch's allocator, one library call on the
// current stream. Backward scratch comes from torch's allocator too (the library's workspace overloads), so it follows
// torch's stream semantics and CUDA-graph capture.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/activations.hpp"
#include "cudalab/norms.hpp"
#include "cudalab/softmax.hpp"
#include "cudalab/swiglu.hpp"

namespace cudalab::torch_ops {
namespace {

// The per-row statistics a norm saves: fp32, the shape of x without its last dimension.
at::Tensor statistics_like(const at::Tensor& x) {
  return at::empty(x.sizes().slice(0, x.dim() - 1), x.options().dtype(at::kFloat));
}

at::Tensor bias_act(const at::Tensor& x, const at::Tensor& bias, c10::string_view activation) {
  constexpr const char* op = "bias_act";
  check_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(BiasActElements{}));
  check_tensor(op, "bias", bias, x.device(), x.scalar_type());
  const auto [rows, features] = rows_and_features(op, x);
  check_vector(op, "bias", bias, features);
  const Activation act = activation_of(op, activation);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty_like(x);
  with_element_type<BiasActElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::bias_act(data<T>(x), data<T>(bias), mutable_data<T>(y), rows, features, act, current_stream(x));
    });
  });
  return y;
}

std::tuple<at::Tensor, at::Tensor> bias_act_backward(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& dy,
                                                     c10::string_view activation) {
  constexpr const char* op = "bias_act_backward";
  check_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(BiasActElements{}));
  check_tensor(op, "bias", bias, x.device(), x.scalar_type());
  check_tensor(op, "dy", dy, x.device(), x.scalar_type());
  const auto [rows, features] = rows_and_features(op, x);
  check_vector(op, "bias", bias, features);
  check_same_shape(op, "dy", dy, "x", x);
  const Activation act = activation_of(op, activation);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor dx = at::empty_like(x);
  at::Tensor dbias = at::empty_like(bias);
  const std::size_t bytes = cudalab::bias_act_backward_workspace_bytes(rows, features);
  at::Tensor scratch = workspace(x, bytes);
  with_element_type<BiasActElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::bias_act_backward(data<T>(x), data<T>(bias), data<T>(dy), mutable_data<T>(dx), mutable_data<T>(dbias),
                                 rows, features, act, scratch.mutable_data_ptr(), bytes, current_stream(x));
    });
  });
  return {dx, dbias};
}

// The column sums of dy over all but its last dimension: a broadcast bias's gradient.
at::Tensor bias_gradient(const at::Tensor& dy) {
  constexpr const char* op = "bias_gradient";
  check_tensor(op, "dy", dy, dy.device(), c10::nullopt, scalar_types(BiasActElements{}));
  const auto [rows, features] = rows_and_features(op, dy);
  const c10::cuda::CUDAGuard guard(dy.device());
  at::Tensor dbias = at::empty({features}, dy.options());
  const std::size_t bytes = cudalab::bias_act_backward_workspace_bytes(rows, features);
  at::Tensor scratch = workspace(dy, bytes);
  with_element_type<BiasActElements>(dy, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::bias_gradient(data<T>(dy), mutable_data<T>(dbias), rows, features, scratch.mutable_data_ptr(), bytes,
                             current_stream(dy));
    });
  });
  return dbias;
}

// The norms' forward, plain or the add_ form (with `residual`: h = x + residual written beside y):
// LayerNorm with `bias`, RMSNorm without. mean is LayerNorm's, h the add_ form's.
struct NormOutputs {
  at::Tensor y, h, mean, rstd;
};

NormOutputs norm_forward(const char* op, const at::Tensor& x, const at::Tensor* residual, const at::Tensor& weight,
                         const at::Tensor* bias, double eps) {
  check_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(NormElements{}));
  if (residual != nullptr) check_tensor(op, "residual", *residual, x.device(), x.scalar_type());
  check_tensor(op, "weight", weight, x.device(), x.scalar_type());
  if (bias != nullptr) check_tensor(op, "bias", *bias, x.device(), x.scalar_type());
  const auto [rows, features] = rows_and_features(op, x);
  if (residual != nullptr) check_same_shape(op, "residual", *residual, "x", x);
  check_vector(op, "weight", weight, features);
  if (bias != nullptr) check_vector(op, "bias", *bias, features);
  const c10::cuda::CUDAGuard guard(x.device());
  NormOutputs out;
  out.y = at::empty_like(x);
  if (residual != nullptr) out.h = at::empty_like(x);
  if (bias != nullptr) out.mean = statistics_like(x);
  out.rstd = statistics_like(x);
  with_element_type<NormElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto e = static_cast<float>(eps);
    float* rstd = out.rstd.mutable_data_ptr<float>();
    call_library(op, [&] {
      const cudaStream_t stream = current_stream(x);
      if (bias != nullptr && residual != nullptr) {
        cudalab::add_layer_norm(data<T>(x), data<T>(*residual), data<T>(weight), data<T>(*bias), mutable_data<T>(out.y),
                                mutable_data<T>(out.h), out.mean.mutable_data_ptr<float>(), rstd, rows, features, e,
                                stream);
      } else if (bias != nullptr) {
        cudalab::layer_norm(data<T>(x), data<T>(weight), data<T>(*bias), mutable_data<T>(out.y),
                            out.mean.mutable_data_ptr<float>(), rstd, rows, features, e, stream);
      } else if (residual != nullptr) {
        cudalab::add_rms_norm(data<T>(x), data<T>(*residual), data<T>(weight), mutable_data<T>(out.y),
                              mutable_data<T>(out.h), rstd, rows, features, e, stream);
      } else {
        cudalab::rms_norm(data<T>(x), data<T>(weight), mutable_data<T>(out.y), rstd, rows, features, e, stream);
      }
    });
  });
  return out;
}

// The norms' backward from x (the add_ form's h, named so) and dy, plus the add_ form's dh; mean
// given for LayerNorm, which also returns dbias.
struct NormGradients {
  at::Tensor dx, dweight, dbias;
};

NormGradients norm_backward(const char* op, const char* x_name, const at::Tensor& x, const at::Tensor& dy,
                            const at::Tensor* dh, const at::Tensor& weight, const at::Tensor* mean,
                            const at::Tensor& rstd) {
  check_tensor(op, x_name, x, x.device(), c10::nullopt, scalar_types(NormElements{}));
  check_tensor(op, "dy", dy, x.device(), x.scalar_type());
  if (dh != nullptr) check_tensor(op, "dh", *dh, x.device(), x.scalar_type());
  check_tensor(op, "weight", weight, x.device(), x.scalar_type());
  const auto [rows, features] = rows_and_features(op, x);
  check_same_shape(op, "dy", dy, x_name, x);
  if (dh != nullptr) check_same_shape(op, "dh", *dh, x_name, x);
  check_vector(op, "weight", weight, features);
  if (mean != nullptr) check_statistics(op, "mean", *mean, x.device(), rows);
  check_statistics(op, "rstd", rstd, x.device(), rows);
  const c10::cuda::CUDAGuard guard(x.device());
  NormGradients out;
  out.dx = at::empty_like(x);
  out.dweight = at::empty_like(weight);
  if (mean != nullptr) out.dbias = at::empty_like(weight);
  const std::size_t bytes = mean != nullptr ? cudalab::layer_norm_backward_workspace_bytes(rows, features)
                                            : cudalab::rms_norm_backward_workspace_bytes(rows, features);
  at::Tensor scratch = workspace(x, bytes);
  with_element_type<NormElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const float* saved_rstd = rstd.const_data_ptr<float>();
    void* work = scratch.mutable_data_ptr();
    call_library(op, [&] {
      const cudaStream_t stream = current_stream(x);
      if (mean != nullptr && dh != nullptr) {
        cudalab::add_layer_norm_backward(data<T>(x), data<T>(dy), data<T>(*dh), data<T>(weight),
                                         mean->const_data_ptr<float>(), saved_rstd, mutable_data<T>(out.dx),
                                         mutable_data<T>(out.dweight), mutable_data<T>(out.dbias), rows, features, work,
                                         bytes, stream);
      } else if (mean != nullptr) {
        cudalab::layer_norm_backward(data<T>(x), data<T>(dy), data<T>(weight), mean->const_data_ptr<float>(),
                                     saved_rstd, mutable_data<T>(out.dx), mutable_data<T>(out.dweight),
                                     mutable_data<T>(out.dbias), rows, features, work, bytes, stream);
      } else if (dh != nullptr) {
        cudalab::add_rms_norm_backward(data<T>(x), data<T>(dy), data<T>(*dh), data<T>(weight), saved_rstd,
                                       mutable_data<T>(out.dx), mutable_data<T>(out.dweight), rows, features, work,
                                       bytes, stream);
      } else {
        cudalab::rms_norm_backward(data<T>(x), data<T>(dy), data<T>(weight), saved_rstd, mutable_data<T>(out.dx),
                                   mutable_data<T>(out.dweight), rows, features, work, bytes, stream);
      }
    });
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm(const at::Tensor& x, const at::Tensor& weight,
                                                          const at::Tensor& bias, double eps) {
  NormOutputs o = norm_forward("layer_norm", x, nullptr, weight, &bias, eps);
  return {o.y, o.mean, o.rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward(const at::Tensor& x, const at::Tensor& dy,
                                                                   const at::Tensor& weight, const at::Tensor& mean,
                                                                   const at::Tensor& rstd) {
  NormGradients g = norm_backward("layer_norm_backward", "x", x, dy, nullptr, weight, &mean, rstd);
  return {g.dx, g.dweight, g.dbias};
}

std::tuple<at::Tensor, at::Tensor> rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  NormOutputs o = norm_forward("rms_norm", x, nullptr, weight, nullptr, eps);
  return {o.y, o.rstd};
}

std::tuple<at::Tensor, at::Tensor> rms_norm_backward(const at::Tensor& x, const at::Tensor& dy,
                                                     const at::Tensor& weight, const at::Tensor& rstd) {
  NormGradients g = norm_backward("rms_norm_backward", "x", x, dy, nullptr, weight, nullptr, rstd);
  return {g.dx, g.dweight};
}

// The add_ forms: y = norm(h) and h = x + residual, one pass (h is returned: the block's new
// residual stream).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_layer_norm(const at::Tensor& x,
                                                                          const at::Tensor& residual,
                                                                          const at::Tensor& weight,
                                                                          const at::Tensor& bias, double eps) {
  NormOutputs o = norm_forward("add_layer_norm", x, &residual, weight, &bias, eps);
  return {o.y, o.h, o.mean, o.rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> add_layer_norm_backward(const at::Tensor& h, const at::Tensor& dy,
                                                                       const at::Tensor& dh, const at::Tensor& weight,
                                                                       const at::Tensor& mean, const at::Tensor& rstd) {
  NormGradients g = norm_backward("add_layer_norm_backward", "h", h, dy, &dh, weight, &mean, rstd);
  return {g.dx, g.dweight, g.dbias};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& residual,
                                                            const at::Tensor& weight, double eps) {
  NormOutputs o = norm_forward("add_rms_norm", x, &residual, weight, nullptr, eps);
  return {o.y, o.h, o.rstd};
}

std::tuple<at::Tensor, at::Tensor> add_rms_norm_backward(const at::Tensor& h, const at::Tensor& dy,
                                                         const at::Tensor& dh, const at::Tensor& weight,
                                                         const at::Tensor& rstd) {
  NormGradients g = norm_backward("add_rms_norm_backward", "h", h, dy, &dh, weight, nullptr, rstd);
  return {g.dx, g.dweight};
}

at::Tensor softmax(const at::Tensor& x) {
  constexpr const char* op = "softmax";
  check_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(SoftmaxElements{}));
  const auto [rows, features] = rows_and_features(op, x);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty_like(x);
  with_element_type<SoftmaxElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] { cudalab::softmax(data<T>(x), mutable_data<T>(y), rows, features, current_stream(x)); });
  });
  return y;
}

at::Tensor softmax_backward(const at::Tensor& y, const at::Tensor& dy) {
  constexpr const char* op = "softmax_backward";
  check_tensor(op, "y", y, y.device(), c10::nullopt, scalar_types(SoftmaxElements{}));
  check_tensor(op, "dy", dy, y.device(), y.scalar_type());
  check_same_shape(op, "dy", dy, "y", y);
  const auto [rows, features] = rows_and_features(op, y);
  const c10::cuda::CUDAGuard guard(y.device());
  at::Tensor dx = at::empty_like(y);
  with_element_type<SoftmaxElements>(y, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::softmax_backward(data<T>(y), data<T>(dy), mutable_data<T>(dx), rows, features, current_stream(y));
    });
  });
  return dx;
}

// A gated unit (SwiGLU or GeGLU) through its library entry `forward(gate, up, y, n, stream)`.
template <typename Forward>
at::Tensor gated_unit(const char* op, const at::Tensor& gate, const at::Tensor& up, Forward forward) {
  check_tensor(op, "gate", gate, gate.device(), c10::nullopt, scalar_types(SwigluElements{}));
  check_tensor(op, "up", up, gate.device(), gate.scalar_type());
  check_same_shape(op, "up", up, "gate", gate);
  const c10::cuda::CUDAGuard guard(gate.device());
  at::Tensor y = at::empty_like(gate);
  with_element_type<SwigluElements>(gate, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op,
                 [&] { forward(data<T>(gate), data<T>(up), mutable_data<T>(y), gate.numel(), current_stream(gate)); });
  });
  return y;
}

// Its backward through `backward(gate, up, dy, dgate, dup, n, stream)`.
template <typename Backward>
std::tuple<at::Tensor, at::Tensor> gated_unit_backward(const char* op, const at::Tensor& gate, const at::Tensor& up,
                                                       const at::Tensor& dy, Backward backward) {
  check_tensor(op, "gate", gate, gate.device(), c10::nullopt, scalar_types(SwigluElements{}));
  check_tensor(op, "up", up, gate.device(), gate.scalar_type());
  check_tensor(op, "dy", dy, gate.device(), gate.scalar_type());
  check_same_shape(op, "up", up, "gate", gate);
  check_same_shape(op, "dy", dy, "gate", gate);
  const c10::cuda::CUDAGuard guard(gate.device());
  at::Tensor dgate = at::empty_like(gate);
  at::Tensor dup = at::empty_like(gate);
  with_element_type<SwigluElements>(gate, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      backward(data<T>(gate), data<T>(up), data<T>(dy), mutable_data<T>(dgate), mutable_data<T>(dup), gate.numel(),
               current_stream(gate));
    });
  });
  return {dgate, dup};
}

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  return gated_unit("swiglu", gate, up, [](auto... a) { cudalab::swiglu(a...); });
}

std::tuple<at::Tensor, at::Tensor> swiglu_backward(const at::Tensor& gate, const at::Tensor& up, const at::Tensor& dy) {
  return gated_unit_backward("swiglu_backward", gate, up, dy, [](auto... a) { cudalab::swiglu_backward(a...); });
}

at::Tensor geglu(const at::Tensor& gate, const at::Tensor& up) {
  return gated_unit("geglu", gate, up, [](auto... a) { cudalab::geglu(a...); });
}

std::tuple<at::Tensor, at::Tensor> geglu_backward(const at::Tensor& gate, const at::Tensor& up, const at::Tensor& dy) {
  return gated_unit_backward("geglu_backward", gate, up, dy, [](auto... a) { cudalab::geglu_backward(a...); });
}

// A packed gated unit through `forward(x, y, rows, width, stream)`: x [.., 2F] (gate's F columns,
// then up's, as a fused projection gives them) to y [.., F].
template <typename Forward>
at::Tensor packed_gated_unit(const char* op, const at::Tensor& x, Forward forward) {
  check_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(SwigluElements{}));
  const auto [rows, columns] = rows_and_features(op, x);
  TORCH_CHECK_VALUE(columns % 2 == 0, "cudalab.", op,
                    ": x's last dimension (gate's columns, then up's) must be even, got ", columns);
  std::vector<std::int64_t> sizes = x.sizes().vec();
  sizes.back() = columns / 2;
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty(sizes, x.options());
  with_element_type<SwigluElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] { forward(data<T>(x), mutable_data<T>(y), rows, columns / 2, current_stream(x)); });
  });
  return y;
}

// Its backward through `backward(x, dy, dx, rows, width, stream)`: dx in x's layout.
template <typename Backward>
at::Tensor packed_gated_unit_backward(const char* op, const at::Tensor& x, const at::Tensor& dy, Backward backward) {
  check_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(SwigluElements{}));
  check_tensor(op, "dy", dy, x.device(), x.scalar_type());
  const auto [rows, columns] = rows_and_features(op, x);
  TORCH_CHECK_VALUE(columns % 2 == 0, "cudalab.", op,
                    ": x's last dimension (gate's columns, then up's) must be even, got ", columns);
  std::vector<std::int64_t> sizes = x.sizes().vec();
  sizes.back() = columns / 2;
  TORCH_CHECK_VALUE(dy.sizes() == at::IntArrayRef(sizes), "cudalab.", op, ": dy must have shape ",
                    at::IntArrayRef(sizes), " (x's with half its last dimension), got ", dy.sizes());
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor dx = at::empty_like(x);
  with_element_type<SwigluElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op,
                 [&] { backward(data<T>(x), data<T>(dy), mutable_data<T>(dx), rows, columns / 2, current_stream(x)); });
  });
  return dx;
}

at::Tensor swiglu_packed(const at::Tensor& x) {
  return packed_gated_unit("swiglu_packed", x, [](auto... a) { cudalab::swiglu_packed(a...); });
}

at::Tensor swiglu_packed_backward(const at::Tensor& x, const at::Tensor& dy) {
  return packed_gated_unit_backward("swiglu_packed_backward", x, dy,
                                    [](auto... a) { cudalab::swiglu_packed_backward(a...); });
}

at::Tensor geglu_packed(const at::Tensor& x) {
  return packed_gated_unit("geglu_packed", x, [](auto... a) { cudalab::geglu_packed(a...); });
}

at::Tensor geglu_packed_backward(const at::Tensor& x, const at::Tensor& dy) {
  return packed_gated_unit_backward("geglu_packed_backward", x, dy,
                                    [](auto... a) { cudalab::geglu_packed_backward(a...); });
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(m, "bias_act(Tensor x, Tensor bias, str activation) -> Tensor", &bias_act, BiasActElements{});
  define_op(m, "bias_act_backward(Tensor x, Tensor bias, Tensor dy, str activation) -> (Tensor, Tensor)",
            &bias_act_backward, BiasActElements{});
  define_op(m, "bias_gradient(Tensor dy) -> Tensor", &bias_gradient, BiasActElements{});
  define_op(m, "layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> (Tensor, Tensor, Tensor)", &layer_norm,
            NormElements{});
  define_op(
      m,
      "layer_norm_backward(Tensor x, Tensor dy, Tensor weight, Tensor mean, Tensor rstd) -> (Tensor, Tensor, Tensor)",
      &layer_norm_backward, NormElements{});
  define_op(m, "rms_norm(Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)", &rms_norm, NormElements{});
  define_op(m, "rms_norm_backward(Tensor x, Tensor dy, Tensor weight, Tensor rstd) -> (Tensor, Tensor)",
            &rms_norm_backward, NormElements{});
  define_op(m,
            "add_layer_norm(Tensor x, Tensor residual, Tensor weight, Tensor bias, float eps) -> (Tensor, Tensor, "
            "Tensor, Tensor)",
            &add_layer_norm, NormElements{});
  define_op(m,
            "add_layer_norm_backward(Tensor h, Tensor dy, Tensor dh, Tensor weight, Tensor mean, Tensor rstd) -> "
            "(Tensor, Tensor, Tensor)",
            &add_layer_norm_backward, NormElements{});
  define_op(m, "add_rms_norm(Tensor x, Tensor residual, Tensor weight, float eps) -> (Tensor, Tensor, Tensor)",
            &add_rms_norm, NormElements{});
  define_op(m, "add_rms_norm_backward(Tensor h, Tensor dy, Tensor dh, Tensor weight, Tensor rstd) -> (Tensor, Tensor)",
            &add_rms_norm_backward, NormElements{});
  define_op(m, "softmax(Tensor x) -> Tensor", &softmax, SoftmaxElements{});
  define_op(m, "softmax_backward(Tensor y, Tensor dy) -> Tensor", &softmax_backward, SoftmaxElements{});
  define_op(m, "swiglu(Tensor gate, Tensor up) -> Tensor", &swiglu, SwigluElements{});
  define_op(m, "swiglu_backward(Tensor gate, Tensor up, Tensor dy) -> (Tensor, Tensor)", &swiglu_backward,
            SwigluElements{});
  define_op(m, "geglu(Tensor gate, Tensor up) -> Tensor", &geglu, SwigluElements{});
  define_op(m, "geglu_backward(Tensor gate, Tensor up, Tensor dy) -> (Tensor, Tensor)", &geglu_backward,
            SwigluElements{});
  define_op(m, "swiglu_packed(Tensor x) -> Tensor", &swiglu_packed, SwigluElements{});
  define_op(m, "swiglu_packed_backward(Tensor x, Tensor dy) -> Tensor", &swiglu_packed_backward, SwigluElements{});
  define_op(m, "geglu_packed(Tensor x) -> Tensor", &geglu_packed, SwigluElements{});
  define_op(m, "geglu_packed_backward(Tensor x, Tensor dy) -> Tensor", &geglu_packed_backward, SwigluElements{});
}

}  // namespace cudalab::torch_ops
