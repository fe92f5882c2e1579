#include "harness/workload.hpp"

#include <algorithm>

#include "cudalab/error.hpp"

namespace cudalab::harness {
namespace {

bool any_modifies_inputs(const std::vector<const Variant*>& variants) {
  return std::any_of(variants.begin(), variants.end(), [](const Variant* v) { return v->modifies_inputs; });
}

// The tensors, the pristine copies `variants` need and the check's bytes: all but the workspace.
std::size_t tensor_device_bytes(const Op& op, const Problem& problem, const std::vector<const Variant*>& variants) {
  const bool keep_inputs = any_modifies_inputs(variants);
  std::size_t bytes = 0;
  for (const TensorSpec& t : op.tensors) {
    const std::size_t size = t.bytes_for(problem);
    bytes += size;
    if (t.role == TensorRole::input_output || (t.role == TensorRole::input && keep_inputs)) bytes += size;
  }
  return bytes + (op.check_device_bytes ? op.check_device_bytes(problem) : 0);
}

std::size_t workspace_bytes(const Variant& variant, const Problem& problem) {
  return variant.workspace_bytes ? variant.workspace_bytes(problem) : 0;
}

}  // namespace

std::size_t workload_device_bytes(const Op& op, const Problem& problem, const std::vector<const Variant*>& variants) {
  std::size_t workspace = 0;
  for (const Variant* v : variants) workspace = std::max(workspace, workspace_bytes(*v, problem));
  return tensor_device_bytes(op, problem, variants) + workspace;
}

std::size_t variant_device_bytes(const Op& op, const Problem& problem, const std::vector<const Variant*>& variants,
                                 const Variant& variant) {
  return tensor_device_bytes(op, problem, variants) + workspace_bytes(variant, problem);
}

std::size_t workload_host_bytes(const Op& op, const Problem& problem) {
  std::size_t bytes = 0;
  for (const TensorSpec& t : op.tensors) bytes += t.bytes_for(problem) * (t.role == TensorRole::input_output ? 2 : 1);
  return bytes + (op.check_host_bytes ? op.check_host_bytes(problem) : 0);
}

Workload::Workload(const Op& op, const Problem& problem, bool keep_inputs) : op_(op), problem_(problem) {
  for (const TensorSpec& spec : op.tensors) {
    Tensor tensor(spec.name, spec.dtype_for(problem), spec.elements(problem));
    const bool keep = spec.role == TensorRole::input_output || (spec.role == TensorRole::input && keep_inputs);
    pristine_.emplace_back(keep ? static_cast<std::int64_t>(tensor.bytes()) : 0);
    if (spec.role == TensorRole::input_output) tensor.keep_initial_host_copy();
    tensors_.add(std::move(tensor));
  }
}

void Workload::generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream) {
  std::uint64_t stream_seed = seed;
  for (std::size_t i = 0; i < op_.tensors.size(); ++i) {
    const TensorSpec& spec = op_.tensors[i];
    Tensor& tensor = tensors_.all()[i];
    if (spec.role == TensorRole::output) continue;
    // Each input draws its own stream, so two inputs of one problem never hold the same values.
    if (spec.fill) {
      spec.fill(tensor.device(), tensor.count(), stream_seed, distribution, problem_, stream);
    } else {
      fill_random(tensor.dtype(), tensor.device(), tensor.count(), stream_seed, distribution, stream);
    }
    stream_seed = mix64(stream_seed);
  }
  if (op_.derive_inputs) op_.derive_inputs(problem_, tensors_, stream);
  for (std::size_t i = 0; i < op_.tensors.size(); ++i) {
    const TensorSpec& spec = op_.tensors[i];
    Tensor& tensor = tensors_.all()[i];
    if (spec.role == TensorRole::output || tensor.bytes() == 0) continue;
    void* host = spec.role == TensorRole::input_output ? tensor.initial_host() : tensor.host();
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host, tensor.device(), tensor.bytes(), cudaMemcpyDeviceToHost, stream));
    if (pristine_[i].bytes() > 0)
      CUDALAB_CUDA_CHECK(
          cudaMemcpyAsync(pristine_[i].data(), tensor.device(), tensor.bytes(), cudaMemcpyDeviceToDevice, stream));
  }
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void Workload::poison(cudaStream_t stream) {
  for (Tensor& tensor : tensors_.all()) {
    const TensorSpec& spec = op_.tensors[static_cast<std::size_t>(&tensor - tensors_.all().data())];
    if (spec.role == TensorRole::output)
      harness::poison(tensor.device(), tensor.bytes(), stream, poison_byte(tensor.dtype()));
  }
}

void Workload::prepare(const Variant& variant, cudaStream_t stream) {
  for (std::size_t i = 0; i < op_.tensors.size(); ++i) {
    const TensorRole role = op_.tensors[i].role;
    const bool restore = role == TensorRole::input_output || (role == TensorRole::input && variant.modifies_inputs);
    if (!restore || pristine_[i].bytes() == 0) continue;
    Tensor& tensor = tensors_.all()[i];
    CUDALAB_CUDA_CHECK(
        cudaMemcpyAsync(tensor.device(), pristine_[i].data(), tensor.bytes(), cudaMemcpyDeviceToDevice, stream));
  }
}

void Workload::reset_workspace(const Variant& variant, cudaStream_t stream) {
  tensors_.reset_workspace(workspace_bytes(variant, problem_), stream);
}

BoundLaunch Workload::bind(const Variant& variant) { return variant.bind(problem_, tensors_); }

BoundLaunch Workload::launch_once(const Variant& variant, std::uint64_t seed, Distribution distribution,
                                  cudaStream_t stream) {
  generate(seed, distribution, stream);
  poison(stream);
  reset_workspace(variant, stream);
  prepare(variant, stream);
  BoundLaunch bound = bind(variant);
  bound(stream);
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return bound;
}

Comparison Workload::check(const Variant& variant, Distribution distribution, cudaStream_t stream) {
  for (std::size_t i = 0; i < op_.tensors.size(); ++i)
    if (op_.tensors[i].role != TensorRole::input) tensors_.all()[i].copy_to_host(stream);
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  const CheckContext context{problem_, distribution, compute_unit(variant.engine, problem_.dtype), tensors_, stream};
  return op_.check(context);
}

}  // namespace cudalab::harness
