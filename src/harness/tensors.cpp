#include "harness/tensors.hpp"

#include "cudalab/error.hpp"

namespace cudalab::harness {

std::size_t TensorSpec::bytes_for(const Problem& problem) const {
  return static_cast<std::size_t>(elements(problem)) * size_of(dtype_for(problem));
}

Tensor::Tensor(std::string name, DType dtype, std::int64_t count)
    : name_(std::move(name)),
      dtype_(dtype),
      count_(count),
      device_(static_cast<std::int64_t>(bytes())),
      host_(HostBlockCache::process().acquire(bytes())) {}

void Tensor::copy_to_host(cudaStream_t stream) {
  if (bytes() > 0) CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host(), device(), bytes(), cudaMemcpyDeviceToHost, stream));
}

void Tensor::require_dtype(DType asked) const {
  if (asked != dtype_)
    throw Error(ErrorKind::invalid_argument,
                "tensor '" + name_ + "' holds " + to_string(dtype_) + ", asked for " + to_string(asked), __FILE__,
                __LINE__);
}

Tensor& Tensors::operator[](const std::string& name) {
  for (Tensor& t : tensors_)
    if (t.name() == name) return t;
  throw Error(ErrorKind::invalid_argument, "no tensor named '" + name + "'", __FILE__, __LINE__);
}

const Tensor& Tensors::operator[](const std::string& name) const {
  return const_cast<Tensors&>(*this)[name];  // the lookup only; constness returns with the result
}

void Tensors::reset_workspace(std::size_t bytes, cudaStream_t stream) {
  if (bytes > workspace_.bytes()) {
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));  // the old buffer may still be in use
    workspace_ = DeviceBuffer<unsigned char>(static_cast<std::int64_t>(bytes));
  }
  if (workspace_.bytes() > 0) CUDALAB_CUDA_CHECK(cudaMemsetAsync(workspace_.data(), 0, workspace_.bytes(), stream));
}

}  // namespace cudalab::harness
