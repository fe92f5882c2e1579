// AdamW as torch ops: one step over lists of parameters, gradients and moments, updated in place
// (adamw_), or of 16-bit parameters with fp32 master weights and moments (adamw_master_).
// The optimizer that keeps the moments and the step count is cudalab.optim.AdamW (python/).
#include <string>
#include <type_traits>
#include <vector>

#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/adamw.hpp"

namespace cudalab::torch_ops {
namespace {

AdamWHyperparameters hyperparameters(double lr, double beta1, double beta2, double eps, double weight_decay,
                                     std::int64_t step) {
  AdamWHyperparameters hyper;
  hyper.lr = static_cast<float>(lr), hyper.beta1 = static_cast<float>(beta1), hyper.beta2 = static_cast<float>(beta2);
  hyper.eps = static_cast<float>(eps), hyper.weight_decay = static_cast<float>(weight_decay), hyper.step = step;
  return hyper;
}

void adamw_(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs, double lr,
            double beta1, double beta2, double eps, double weight_decay, std::int64_t step) {
  constexpr const char* op = "adamw_";
  TORCH_CHECK_VALUE(
      grads.size() == params.size() && exp_avgs.size() == params.size() && exp_avg_sqs.size() == params.size(),
      "cudalab.adamw_: params, grads, exp_avgs and exp_avg_sqs must be lists of one length, got ", params.size(), ", ",
      grads.size(), ", ", exp_avgs.size(), " and ", exp_avg_sqs.size());
  if (params.empty()) return;
  const at::Tensor& first = params[0];
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    const std::string names[] = {"params" + at, "grads" + at, "exp_avgs" + at, "exp_avg_sqs" + at};
    const at::Tensor* tensors[] = {&params[i], &grads[i], &exp_avgs[i], &exp_avg_sqs[i]};
    for (int k = 0; k < 4; ++k) {
      check_tensor(op, names[k].c_str(), *tensors[k], first.device(), first.scalar_type(),
                   scalar_types(AdamWElements{}));
      TORCH_CHECK_VALUE(tensors[k]->numel() == params[i].numel(), "cudalab.adamw_: ", names[k], " must have ",
                        params[i].numel(), " elements like params", at, ", got ", tensors[k]->numel());
    }
  }
  const c10::cuda::CUDAGuard guard(first.device());
  const AdamWHyperparameters hyper = hyperparameters(lr, beta1, beta2, eps, weight_decay, step);
  with_element_type<AdamWElements>(first, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    std::vector<AdamWTensor<T>> list;
    for (std::size_t i = 0; i < params.size(); ++i)
      list.push_back({reinterpret_cast<T*>(params[i].data_ptr()), data<T>(grads[i]),
                      reinterpret_cast<T*>(exp_avgs[i].data_ptr()), reinterpret_cast<T*>(exp_avg_sqs[i].data_ptr()),
                      params[i].numel()});
    call_library(
        op, [&] { cudalab::adamw(list.data(), static_cast<std::int64_t>(list.size()), hyper, current_stream(first)); });
  });
}

// The mixed-precision step: 16-bit params and grads, fp32 masters and moments, one length each.
void adamw_master_(at::TensorList params, at::TensorList grads, at::TensorList masters, at::TensorList exp_avgs,
                   at::TensorList exp_avg_sqs, double lr, double beta1, double beta2, double eps, double weight_decay,
                   std::int64_t step) {
  constexpr const char* op = "adamw_master_";
  const std::size_t n = params.size();
  TORCH_CHECK_VALUE(grads.size() == n && masters.size() == n && exp_avgs.size() == n && exp_avg_sqs.size() == n,
                    "cudalab.adamw_master_: params, grads, masters, exp_avgs and exp_avg_sqs must be lists of one "
                    "length, got ",
                    n, ", ", grads.size(), ", ", masters.size(), ", ", exp_avgs.size(), " and ", exp_avg_sqs.size());
  if (params.empty()) return;
  const at::Tensor& first = params[0];
  for (std::size_t i = 0; i < n; ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    check_tensor(op, ("params" + at).c_str(), params[i], first.device(), first.scalar_type(),
                 scalar_types(AdamWMasterElements{}));
    check_tensor(op, ("grads" + at).c_str(), grads[i], first.device(), first.scalar_type());
    const std::string names[] = {"masters" + at, "exp_avgs" + at, "exp_avg_sqs" + at};
    const at::Tensor* fp32[] = {&masters[i], &exp_avgs[i], &exp_avg_sqs[i]};
    for (int k = 0; k < 3; ++k) check_tensor(op, names[k].c_str(), *fp32[k], first.device(), at::kFloat);
    const at::Tensor* all[] = {&grads[i], &masters[i], &exp_avgs[i], &exp_avg_sqs[i]};
    for (const at::Tensor* t : all)
      TORCH_CHECK_VALUE(t->numel() == params[i].numel(), "cudalab.adamw_master_: every list's tensor ", i,
                        " must have params", at, "'s ", params[i].numel(), " elements, got ", t->numel());
  }
  const c10::cuda::CUDAGuard guard(first.device());
  const AdamWHyperparameters hyper = hyperparameters(lr, beta1, beta2, eps, weight_decay, step);
  with_element_type<AdamWMasterElements>(first, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    std::vector<AdamWMasterTensor<T>> list;
    for (std::size_t i = 0; i < n; ++i)
      list.push_back({reinterpret_cast<T*>(params[i].data_ptr()), data<T>(grads[i]),
                      reinterpret_cast<float*>(masters[i].data_ptr()), reinterpret_cast<float*>(exp_avgs[i].data_ptr()),
                      reinterpret_cast<float*>(exp_avg_sqs[i].data_ptr()), params[i].numel()});
    call_library(op, [&] {
      cudalab::adamw_master(list.data(), static_cast<std::int64_t>(list.size()), hyper, current_stream(first));
    });
  });
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(m,
            "adamw_(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] exp_avgs, Tensor(c!)[] exp_avg_sqs, float lr, "
            "float beta1, float beta2, float eps, float weight_decay, int step) -> ()",
            &adamw_, AdamWElements{});
  define_op(
      m,
      "adamw_master_(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] masters, Tensor(c!)[] exp_avgs, "
      "Tensor(d!)[] exp_avg_sqs, float lr, float beta1, float beta2, float eps, float weight_decay, int step) -> ()",
      &adamw_master_, AdamWMasterElements{});
}

}  // namespace cudalab::torch_ops
