// Cross-entropy as torch ops: the forward (per-row loss and lse, and the gradient in the same pass
// when asked), the backward from lse, and the fused gradient's in-place scaling by the incoming
// gradient. The reductions, the autograd rule and the fused gradient's
// use live in python/cudalab/ops.py.
#include <tuple>
#include <type_traits>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/cross_entropy.hpp"

namespace cudalab::torch_ops {
namespace {

// logits [rows, vocab] of the element list, target [rows] int64 on the same device.
std::pair<std::int64_t, std::int64_t> check_logits_and_target(const char* op, const at::Tensor& logits,
                                                              const at::Tensor& target) {
  check_tensor(op, "logits", logits, logits.device(), c10::nullopt, scalar_types(CrossEntropyElements{}));
  check_tensor(op, "target", target, logits.device(), at::kLong, {at::kLong});
  TORCH_CHECK_VALUE(logits.dim() == 2, "cudalab.", op, ": logits must be [rows, vocab], got ", logits.sizes());
  TORCH_CHECK_VALUE(target.dim() == 1 && target.size(0) == logits.size(0), "cudalab.", op,
                    ": target must be [rows] = [", logits.size(0), "], got ", target.sizes());
  return {logits.size(0), logits.size(1)};
}

CrossEntropyOptions options_of(std::int64_t ignore_index, double label_smoothing, double z_loss, double softcap) {
  return {ignore_index, static_cast<float>(label_smoothing), static_cast<float>(z_loss), static_cast<float>(softcap)};
}

// The loss and lse of each row, and the gradient into `dlogits` (an undefined tensor: none; the
// logits themselves: over them).
std::pair<at::Tensor, at::Tensor> loss_and_gradient(const char* op, const at::Tensor& logits, const at::Tensor& target,
                                                    std::int64_t ignore_index, double label_smoothing,
                                                    at::Tensor& dlogits, const c10::optional<at::Tensor>& grad_scale,
                                                    double z_loss, double softcap) {
  const auto [rows, vocab] = check_logits_and_target(op, logits, target);
  if (grad_scale.has_value()) {
    check_tensor(op, "grad_scale", *grad_scale, logits.device(), at::kFloat, {at::kFloat});
    TORCH_CHECK_VALUE(grad_scale->numel() == 1, "cudalab.", op, ": grad_scale must hold one value, got ",
                      grad_scale->sizes());
  }
  const c10::cuda::CUDAGuard guard(logits.device());
  at::Tensor loss = at::empty({rows}, logits.options().dtype(at::kFloat));
  at::Tensor lse = at::empty({rows}, logits.options().dtype(at::kFloat));
  with_element_type<CrossEntropyElements>(logits, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::cross_entropy(data<T>(logits), data<std::int64_t>(target), rows, vocab, mutable_data<float>(loss),
                             mutable_data<float>(lse), dlogits.defined() ? mutable_data<T>(dlogits) : nullptr,
                             grad_scale.has_value() ? data<float>(*grad_scale) : nullptr,
                             options_of(ignore_index, label_smoothing, z_loss, softcap), current_stream(logits));
    });
  });
  return {loss, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> cross_entropy(const at::Tensor& logits, const at::Tensor& target,
                                                             std::int64_t ignore_index, double label_smoothing,
                                                             bool with_gradient,
                                                             const c10::optional<at::Tensor>& grad_scale, double z_loss,
                                                             double softcap) {
  at::Tensor dlogits = with_gradient ? at::empty_like(logits) : at::Tensor();
  auto [loss, lse] = loss_and_gradient("cross_entropy", logits, target, ignore_index, label_smoothing, dlogits,
                                       grad_scale, z_loss, softcap);
  return {loss, lse, with_gradient ? dlogits : at::empty({0}, logits.options())};
}

// The loss and lse of each row, the logits replaced by their gradient: one buffer of [rows, vocab]
// where the out-of-place call needs two (linear_cross_entropy's chunks).
std::tuple<at::Tensor, at::Tensor> cross_entropy_(at::Tensor logits, const at::Tensor& target,
                                                  std::int64_t ignore_index, double label_smoothing,
                                                  const c10::optional<at::Tensor>& grad_scale, double z_loss,
                                                  double softcap) {
  auto [loss, lse] = loss_and_gradient("cross_entropy_", logits, target, ignore_index, label_smoothing, logits,
                                       grad_scale, z_loss, softcap);
  return {loss, lse};
}

at::Tensor cross_entropy_backward(const at::Tensor& logits, const at::Tensor& target, const at::Tensor& lse,
                                  const at::Tensor& dloss, std::int64_t ignore_index, double label_smoothing,
                                  double z_loss, double softcap) {
  constexpr const char* op = "cross_entropy_backward";
  const auto [rows, vocab] = check_logits_and_target(op, logits, target);
  check_tensor(op, "lse", lse, logits.device(), at::kFloat, {at::kFloat});
  check_tensor(op, "dloss", dloss, logits.device(), at::kFloat, {at::kFloat});
  TORCH_CHECK_VALUE(lse.numel() == rows, "cudalab.", op, ": lse must hold one value per row (", rows, "), got ",
                    lse.sizes());
  TORCH_CHECK_VALUE(dloss.numel() == rows || dloss.numel() == 1, "cudalab.", op,
                    ": dloss must hold one value per row (", rows, ") or one for all, got ", dloss.sizes());
  const c10::cuda::CUDAGuard guard(logits.device());
  at::Tensor dlogits = at::empty_like(logits);
  with_element_type<CrossEntropyElements>(logits, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::cross_entropy_backward(data<T>(logits), data<std::int64_t>(target), data<float>(lse), data<float>(dloss),
                                      dloss.numel() == rows ? 1 : 0, rows, vocab, mutable_data<T>(dlogits),
                                      options_of(ignore_index, label_smoothing, z_loss, softcap),
                                      current_stream(logits));
    });
  });
  return dlogits;
}

void cross_entropy_scale_gradient_(at::Tensor dlogits, const at::Tensor& dloss) {
  constexpr const char* op = "cross_entropy_scale_gradient_";
  check_tensor(op, "dlogits", dlogits, dlogits.device(), c10::nullopt, scalar_types(CrossEntropyElements{}));
  check_tensor(op, "dloss", dloss, dlogits.device(), at::kFloat, {at::kFloat});
  TORCH_CHECK_VALUE(dloss.numel() == 1, "cudalab.", op, ": dloss must hold one value, got ", dloss.sizes());
  const c10::cuda::CUDAGuard guard(dlogits.device());
  with_element_type<CrossEntropyElements>(dlogits, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::cross_entropy_scale_gradient(mutable_data<T>(dlogits), dlogits.numel(), data<float>(dloss),
                                            current_stream(dlogits));
    });
  });
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(m,
            "cross_entropy(Tensor logits, Tensor target, int ignore_index, float label_smoothing, bool with_gradient, "
            "Tensor? grad_scale, float z_loss=0., float softcap=0.) -> (Tensor, Tensor, Tensor)",
            &cross_entropy, CrossEntropyElements{});
  define_op(m,
            "cross_entropy_(Tensor(a!) logits, Tensor target, int ignore_index, float label_smoothing, "
            "Tensor? grad_scale, float z_loss=0., float softcap=0.) -> (Tensor, Tensor)",
            &cross_entropy_, CrossEntropyElements{});
  define_op(m,
            "cross_entropy_backward(Tensor logits, Tensor target, Tensor lse, Tensor dloss, int ignore_index, "
            "float label_smoothing, float z_loss=0., float softcap=0.) -> Tensor",
            &cross_entropy_backward, CrossEntropyElements{});
  define_op(m, "cross_entropy_scale_gradient_(Tensor(a!) dlogits, Tensor dloss) -> ()", &cross_entropy_scale_gradient_,
            CrossEntropyElements{});
}

}  // namespace cudalab::torch_ops
