// What every binding shares: argument checks that name the op and the argument, the dtype switch
// onto the library's element types, the current stream, and library errors rethrown as torch's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cudalab/error.hpp"

namespace cudalab::torch_ops {

// The dtypes the fused ops and gemm take.
inline constexpr at::ScalarType kFloatTypes[] = {at::kFloat, at::kHalf, at::kBFloat16};

// torch's names for `dtypes` as a sentence lists them: "float32, float16 or bfloat16".
inline std::string dtype_names(at::ArrayRef<at::ScalarType> dtypes) {
  std::string names;
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    if (i > 0) names += i + 1 == dtypes.size() ? " or " : ", ";
    names += c10::getDtypeNames(dtypes[i]).first;
  }
  return names;
}

// A CUDA tensor on `device` (the first tensor argument's), contiguous, of one of the `allowed`
// dtypes (and of `dtype` when given): the checks every op runs on each tensor argument before it
// allocates or launches anything.
inline void check_tensor(const char* op, const char* name, const at::Tensor& t, const at::Device& device,
                         c10::optional<at::ScalarType> dtype = c10::nullopt,
                         at::ArrayRef<at::ScalarType> allowed = kFloatTypes) {
  TORCH_CHECK(t.is_cuda(), "cudalab.", op, ": ", name, " must be a CUDA tensor, got ", t.device());
  TORCH_CHECK(t.device() == device, "cudalab.", op, ": ", name, " is on ", t.device(), ", the other arguments on ",
              device);
  TORCH_CHECK_TYPE(std::find(allowed.begin(), allowed.end(), t.scalar_type()) != allowed.end(), "cudalab.", op, ": ",
                   name, " must be ", dtype_names(allowed), ", got ", dtype_names(t.scalar_type()));
  if (dtype.has_value())
    TORCH_CHECK_TYPE(t.scalar_type() == *dtype, "cudalab.", op, ": ", name, " must be ", *dtype, " like x, got ",
                     t.scalar_type());
  TORCH_CHECK(t.is_contiguous(), "cudalab.", op, ": ", name,
              " must be contiguous (call .contiguous() first; cudalab does not copy behind your back)");
}

// The same for the fp32 statistics a norm's forward saves (mean, rstd).
inline void check_statistics(const char* op, const char* name, const at::Tensor& t, const at::Device& device,
                             std::int64_t rows) {
  TORCH_CHECK(t.is_cuda() && t.device() == device, "cudalab.", op, ": ", name, " must be a CUDA tensor on ", device,
              ", got ", t.device());
  TORCH_CHECK_TYPE(t.scalar_type() == at::kFloat, "cudalab.", op, ": ", name, " must be float32, got ",
                   t.scalar_type());
  TORCH_CHECK(t.is_contiguous() && t.numel() == rows, "cudalab.", op, ": ", name, " must be contiguous with ", rows,
              " elements (one per row), got ", t.sizes());
}

// A 1-D tensor of `features` elements (a bias, gamma or beta).
inline void check_vector(const char* op, const char* name, const at::Tensor& t, std::int64_t features) {
  TORCH_CHECK_VALUE(t.dim() == 1 && t.size(0) == features, "cudalab.", op, ": ", name,
                    " must have shape [features] = [", features, "], got ", t.sizes());
}

// A gradient (or other companion) `name` of the same shape as `like_name`.
inline void check_same_shape(const char* op, const char* name, const at::Tensor& t, const char* like_name,
                             const at::Tensor& like) {
  TORCH_CHECK_VALUE(t.sizes() == like.sizes(), "cudalab.", op, ": ", name, " must have ", like_name, "'s shape ",
                    like.sizes(), ", got ", t.sizes());
}

// [rows, features] of a tensor whose last dimension holds the features.
inline std::pair<std::int64_t, std::int64_t> rows_and_features(const char* op, const at::Tensor& x) {
  TORCH_CHECK_VALUE(x.dim() >= 1, "cudalab.", op, ": x must have at least one dimension, got a scalar");
  const std::int64_t features = x.size(-1);
  return {features == 0 ? 0 : x.numel() / features, features};
}

// f(T*) with T the library's element type for `t`'s dtype (checked before: float, half, bf16).
template <typename F>
void with_element_type(const at::Tensor& t, F&& f) {
  switch (t.scalar_type()) {
    case at::kFloat: return f(static_cast<float*>(nullptr));
    case at::kHalf: return f(static_cast<__half*>(nullptr));
    default: return f(static_cast<__nv_bfloat16*>(nullptr));
  }
}

template <typename T>
const T* data(const at::Tensor& t) {
  return reinterpret_cast<const T*>(t.const_data_ptr());
}
template <typename T>
T* mutable_data(at::Tensor& t) {
  return reinterpret_cast<T*>(t.mutable_data_ptr());
}

inline cudaStream_t current_stream(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

// Scratch for a library call's workspace overload, from torch's caching allocator on `like`'s
// device, so it follows torch's stream semantics and CUDA-graph capture.
inline at::Tensor workspace(const at::Tensor& like, std::size_t bytes) {
  return at::empty({static_cast<std::int64_t>(bytes)}, like.options().dtype(at::kByte));
}

// Runs a library call, rethrowing cudalab::Error as torch's error with the op's name in front.
template <typename Call>
void call_library(const char* op, Call&& call) {
  try {
    call();
  } catch (const cudalab::Error& e) {
    TORCH_CHECK(false, "cudalab.", op, ": ", e.what());
  }
}

}  // namespace cudalab::torch_ops
