// The tensors of one problem: what an op declares (TensorSpec) and what the generic workload
// allocates from it (Tensor: device memory plus a host copy for the check), found by name.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"
#include "cudalab/memory.hpp"
#include "harness/host_blocks.hpp"
#include "harness/problem.hpp"
#include "harness/random.hpp"

namespace cudalab::harness {

enum class TensorRole {
  input,         // filled with fresh random values before each check
  output,        // poisoned before each launch; copied back and checked
  input_output,  // filled like an input, restored before every launch, checked like an output
};

// Fills `count` elements of a tensor on the device (a custom input stream, e.g. keys below a bin
// count). The default fill is fill_random for the tensor's dtype.
using TensorFill = std::function<void(void* device, std::int64_t count, std::uint64_t seed, Distribution distribution,
                                      const Problem& problem, cudaStream_t stream)>;

struct TensorSpec {
  std::string name;
  TensorRole role = TensorRole::input;
  std::optional<DType> dtype;  // empty: the problem's dtype
  std::function<std::int64_t(const Problem&)> elements;
  TensorFill fill = nullptr;  // inputs only; empty: fill_random

  DType dtype_for(const Problem& problem) const { return dtype.value_or(problem.dtype); }
  std::size_t bytes_for(const Problem& problem) const;
};

// One tensor: `count` elements of `dtype` on the device, and a host copy the workload refreshes
// (inputs after generation, outputs after a launch).
class Tensor {
 public:
  Tensor(std::string name, DType dtype, std::int64_t count);

  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  std::int64_t count() const { return count_; }
  std::size_t bytes() const { return static_cast<std::size_t>(count_) * size_of(dtype_); }
  void* device() const { return device_.data(); }
  const void* host() const { return host_.data(); }
  void* host() { return host_.data(); }

  // Typed views; a dtype other than the tensor's throws (a binding asked for the wrong type).
  template <typename T>
  T* device_as() const {
    require_dtype(dtype_of_v<T>);
    return static_cast<T*>(device());
  }
  template <typename T>
  const T* host_as() const {
    require_dtype(dtype_of_v<T>);
    return static_cast<const T*>(host());
  }
  double host_value(std::int64_t index) const { return element_to_double(dtype_, host(), index); }
  // An input_output tensor's values as generated, before any launch changed them (a GEMM's C
  // that beta reads); null for other roles.
  const void* initial_host() const { return initial_host_.data(); }
  void* initial_host() { return initial_host_.data(); }
  void keep_initial_host_copy() { initial_host_ = HostBlockCache::process().acquire(bytes()); }
  template <typename T>
  const T* initial_host_as() const {
    require_dtype(dtype_of_v<T>);
    return static_cast<const T*>(initial_host());
  }

  void copy_to_host(cudaStream_t stream);  // asynchronous; the caller synchronizes

 private:
  void require_dtype(DType asked) const;

  std::string name_;
  DType dtype_;
  std::int64_t count_;
  DeviceBuffer<unsigned char> device_;
  // Left uninitialised (no zero-fill of gigabytes): every byte is copied over before it is read.
  HostBlock host_;
  HostBlock initial_host_;
};

// The tensors of a workload, in the op's declaration order, and the variant's zeroed workspace.
class Tensors {
 public:
  Tensor& operator[](const std::string& name);
  const Tensor& operator[](const std::string& name) const;
  std::vector<Tensor>& all() { return tensors_; }
  const std::vector<Tensor>& all() const { return tensors_; }
  void add(Tensor tensor) { tensors_.push_back(std::move(tensor)); }

  // Device pointer of tensor `name` as T*.
  template <typename T>
  T* data(const std::string& name) {
    return (*this)[name].template device_as<T>();
  }
  // Host copy of tensor `name` as const T*.
  template <typename T>
  const T* host(const std::string& name) const {
    return (*this)[name].template host_as<T>();
  }
  // Host copy of input_output tensor `name` as generated.
  template <typename T>
  const T* initial(const std::string& name) const {
    return (*this)[name].template initial_host_as<T>();
  }

  void* workspace() const { return workspace_.data(); }
  std::size_t workspace_bytes() const { return workspace_.bytes(); }
  // Grows the workspace to at least `bytes` and zeroes all of it (untimed, before a check).
  void reset_workspace(std::size_t bytes, cudaStream_t stream);

 private:
  std::vector<Tensor> tensors_;
  DeviceBuffer<unsigned char> workspace_;
};

}  // namespace cudalab::harness
