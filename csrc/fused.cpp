// The fused ops (bias + activation, LayerNorm, RMSNorm, softmax, forward and backward) on CUDA
// tensors: checks, outputs from torch's allocator, one library call on the current stream. Backward
// scratch comes from torch's allocator too (the library's workspace overloads), so it follows
// torch's stream semantics and CUDA-graph capture.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/activations.hpp"
#include "cudalab/norms.hpp"
#include "cudalab/softmax.hpp"

namespace cudalab::torch_ops {
namespace {

// The per-row statistics a norm saves: fp32, the shape of x without its last dimension.
at::Tensor statistics_like(const at::Tensor& x) {
  return at::empty(x.sizes().slice(0, x.dim() - 1), x.options().dtype(at::kFloat));
}

Activation activation_of(const char* op, std::int64_t activation) {
  TORCH_CHECK_VALUE(activation >= 0 && activation <= 2, "cudalab.", op,
                    ": activation must be 0 (ReLU), 1 (GELU tanh) or 2 (GELU erf), got ", activation);
  return static_cast<Activation>(activation);
}

at::Tensor bias_act(const at::Tensor& x, const at::Tensor& bias, std::int64_t activation) {
  constexpr const char* op = "bias_act";
  check_tensor(op, "x", x, x.device());
  check_tensor(op, "bias", bias, x.device(), x.scalar_type());
  const auto [rows, features] = rows_and_features(op, x);
  check_vector(op, "bias", bias, features);
  const Activation act = activation_of(op, activation);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty_like(x);
  with_element_type(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::bias_act(data<T>(x), data<T>(bias), mutable_data<T>(y), rows, features, act, current_stream(x));
    });
  });
  return y;
}

std::tuple<at::Tensor, at::Tensor> bias_act_backward(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& dy,
                                                     std::int64_t activation) {
  constexpr const char* op = "bias_act_backward";
  check_tensor(op, "x", x, x.device());
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
  with_element_type(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::bias_act_backward(data<T>(x), data<T>(bias), data<T>(dy), mutable_data<T>(dx), mutable_data<T>(dbias),
                                 rows, features, act, scratch.mutable_data_ptr(), bytes, current_stream(x));
    });
  });
  return {dx, dbias};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm(const at::Tensor& x, const at::Tensor& weight,
                                                          const at::Tensor& bias, double eps) {
  constexpr const char* op = "layer_norm";
  check_tensor(op, "x", x, x.device());
  check_tensor(op, "weight", weight, x.device(), x.scalar_type());
  check_tensor(op, "bias", bias, x.device(), x.scalar_type());
  const auto [rows, features] = rows_and_features(op, x);
  check_vector(op, "weight", weight, features);
  check_vector(op, "bias", bias, features);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty_like(x);
  at::Tensor mean = statistics_like(x);
  at::Tensor rstd = statistics_like(x);
  with_element_type(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::layer_norm(data<T>(x), data<T>(weight), data<T>(bias), mutable_data<T>(y),
                          mean.mutable_data_ptr<float>(), rstd.mutable_data_ptr<float>(), rows, features,
                          static_cast<float>(eps), current_stream(x));
    });
  });
  return {y, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward(const at::Tensor& x, const at::Tensor& dy,
                                                                   const at::Tensor& weight, const at::Tensor& mean,
                                                                   const at::Tensor& rstd) {
  constexpr const char* op = "layer_norm_backward";
  check_tensor(op, "x", x, x.device());
  check_tensor(op, "dy", dy, x.device(), x.scalar_type());
  check_tensor(op, "weight", weight, x.device(), x.scalar_type());
  const auto [rows, features] = rows_and_features(op, x);
  check_same_shape(op, "dy", dy, "x", x);
  check_vector(op, "weight", weight, features);
  check_statistics(op, "mean", mean, x.device(), rows);
  check_statistics(op, "rstd", rstd, x.device(), rows);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor dx = at::empty_like(x);
  at::Tensor dweight = at::empty_like(weight);
  at::Tensor dbias = at::empty_like(weight);
  const std::size_t bytes = cudalab::layer_norm_backward_workspace_bytes(rows, features);
  at::Tensor scratch = workspace(x, bytes);
  with_element_type(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::layer_norm_backward(data<T>(x), data<T>(dy), data<T>(weight), mean.const_data_ptr<float>(),
                                   rstd.const_data_ptr<float>(), mutable_data<T>(dx), mutable_data<T>(dweight),
                                   mutable_data<T>(dbias), rows, features, scratch.mutable_data_ptr(), bytes,
                                   current_stream(x));
    });
  });
  return {dx, dweight, dbias};
}

std::tuple<at::Tensor, at::Tensor> rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  constexpr const char* op = "rms_norm";
  check_tensor(op, "x", x, x.device());
  check_tensor(op, "weight", weight, x.device(), x.scalar_type());
  const auto [rows, features] = rows_and_features(op, x);
  check_vector(op, "weight", weight, features);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty_like(x);
  at::Tensor rstd = statistics_like(x);
  with_element_type(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::rms_norm(data<T>(x), data<T>(weight), mutable_data<T>(y), rstd.mutable_data_ptr<float>(), rows, features,
                        static_cast<float>(eps), current_stream(x));
    });
  });
  return {y, rstd};
}

std::tuple<at::Tensor, at::Tensor> rms_norm_backward(const at::Tensor& x, const at::Tensor& dy,
                                                     const at::Tensor& weight, const at::Tensor& rstd) {
  constexpr const char* op = "rms_norm_backward";
  check_tensor(op, "x", x, x.device());
  check_tensor(op, "dy", dy, x.device(), x.scalar_type());
  check_tensor(op, "weight", weight, x.device(), x.scalar_type());
  const auto [rows, features] = rows_and_features(op, x);
  check_same_shape(op, "dy", dy, "x", x);
  check_vector(op, "weight", weight, features);
  check_statistics(op, "rstd", rstd, x.device(), rows);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor dx = at::empty_like(x);
  at::Tensor dweight = at::empty_like(weight);
  const std::size_t bytes = cudalab::rms_norm_backward_workspace_bytes(rows, features);
  at::Tensor scratch = workspace(x, bytes);
  with_element_type(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::rms_norm_backward(data<T>(x), data<T>(dy), data<T>(weight), rstd.const_data_ptr<float>(),
                                 mutable_data<T>(dx), mutable_data<T>(dweight), rows, features,
                                 scratch.mutable_data_ptr(), bytes, current_stream(x));
    });
  });
  return {dx, dweight};
}

at::Tensor softmax(const at::Tensor& x) {
  constexpr const char* op = "softmax";
  check_tensor(op, "x", x, x.device());
  const auto [rows, features] = rows_and_features(op, x);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty_like(x);
  with_element_type(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] { cudalab::softmax(data<T>(x), mutable_data<T>(y), rows, features, current_stream(x)); });
  });
  return y;
}

at::Tensor softmax_backward(const at::Tensor& y, const at::Tensor& dy) {
  constexpr const char* op = "softmax_backward";
  check_tensor(op, "y", y, y.device());
  check_tensor(op, "dy", dy, y.device(), y.scalar_type());
  check_same_shape(op, "dy", dy, "y", y);
  const auto [rows, features] = rows_and_features(op, y);
  const c10::cuda::CUDAGuard guard(y.device());
  at::Tensor dx = at::empty_like(y);
  with_element_type(y, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::softmax_backward(data<T>(y), data<T>(dy), mutable_data<T>(dx), rows, features, current_stream(y));
    });
  });
  return dx;
}

}  // namespace

TORCH_LIBRARY_IMPL(cudalab, CUDA, m) {
  m.impl("bias_act", &bias_act);
  m.impl("bias_act_backward", &bias_act_backward);
  m.impl("layer_norm", &layer_norm);
  m.impl("layer_norm_backward", &layer_norm_backward);
  m.impl("rms_norm", &rms_norm);
  m.impl("rms_norm_backward", &rms_norm_backward);
  m.impl("softmax", &softmax);
  m.impl("softmax_backward", &softmax_backward);
}

}  // namespace cudalab::torch_ops
