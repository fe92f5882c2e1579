// What every binding shares: argument checks that name the op and the argument, the dtype switch
// onto the library's element types, the current stream, and library errors rethrown as torch's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cudalab/activations.hpp"
#include "cudalab/elements.hpp"
#include "cudalab/error.hpp"

namespace cudalab::torch_ops {

// The dtypes gemm and attention take.
inline constexpr at::ScalarType kFloatTypes[] = {at::kFloat, at::kHalf, at::kBFloat16};

// torch's dtype of a library element type.
template <typename T>
inline constexpr at::ScalarType kScalarTypeOf = c10::CppTypeToScalarType<T>::value;
template <>
inline constexpr at::ScalarType kScalarTypeOf<__half> = at::kHalf;
template <>
inline constexpr at::ScalarType kScalarTypeOf<__nv_bfloat16> = at::kBFloat16;
template <>
inline constexpr at::ScalarType kScalarTypeOf<__nv_fp8_e4m3> = at::kFloat8_e4m3fn;

// torch's dtypes of an op's element list (cudalab::NormElements, ...), in the list's order.
template <typename... Ts>
std::vector<at::ScalarType> scalar_types(TypeList<Ts...>) {
  return {kScalarTypeOf<Ts>...};
}

// torch's names for `dtypes` as a sentence lists them: "float32, float16 or bfloat16".
inline std::string dtype_names(at::ArrayRef<at::ScalarType> dtypes) {
  std::string names;
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    if (i > 0) names += i + 1 == dtypes.size() ? " or " : ", ";
    names += c10::getDtypeNames(dtypes[i]).first;
  }
  return names;
}

// A CUDA tensor on `device` (the first tensor argument's) of one of the `allowed` dtypes (and of
// `dtype` when given), whatever its strides: the checks of an op that reads strided tensors as
// they lie (gemm, rope), which then checks their layout itself.
inline void check_strided_tensor(const char* op, const char* name, const at::Tensor& t, const at::Device& device,
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
}

// The same, contiguous: the checks every other op runs on each tensor argument before it allocates
// or launches anything.
inline void check_tensor(const char* op, const char* name, const at::Tensor& t, const at::Device& device,
                         c10::optional<at::ScalarType> dtype = c10::nullopt,
                         at::ArrayRef<at::ScalarType> allowed = kFloatTypes) {
  check_strided_tensor(op, name, t, device, dtype, allowed);
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

// The Activation an op's `activation` argument names (kActivationNames), or a ValueError listing them.
inline Activation activation_of(const char* op, c10::string_view name) {
  std::string names;
  for (const ActivationName& a : kActivationNames) {
    if (name == a.name) return a.activation;
    names += names.empty() ? "" : ", ";
    names += a.name;
  }
  TORCH_CHECK_VALUE(false, "cudalab.", op, ": activation must be one of ", names, ", got '", name, "'");
}

// [rows, features] of a tensor whose last dimension holds the features.
inline std::pair<std::int64_t, std::int64_t> rows_and_features(const char* op, const at::Tensor& x) {
  TORCH_CHECK_VALUE(x.dim() >= 1, "cudalab.", op, ": x must have at least one dimension, got a scalar");
  const std::int64_t features = x.size(-1);
  return {features == 0 ? 0 : x.numel() / features, features};
}

// f(T*) with T the element of `Elements` whose torch dtype is `t`'s (checked before against
// scalar_types(Elements{})).
template <typename Elements, typename F>
void with_element_type(const at::Tensor& t, F&& f) {
  bool called = false;
  for_each_element(Elements{}, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if (!called && t.scalar_type() == kScalarTypeOf<T>) {
      called = true;
      f(tag);
    }
  });
  TORCH_INTERNAL_ASSERT(called, "no element type for ", t.scalar_type());
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

// Whether a matrix of `rows` x `cols` with these strides has contiguous rows, each at least a row's
// length from the next. A dimension of size 0 or 1 is never stepped over, so its stride does not
// matter.
// Integers or SymInts (under torch.compile, compared without fixing a dynamic size).
template <typename Int>
bool rows_contiguous(const Int& rows, const Int& cols, const Int& row_step, const Int& col_step) {
  return (cols <= 1 || col_step == 1) && (rows <= 1 || row_step >= cols);
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

// ---- defining an op: its schema, its CUDA kernel and the CPU refusal, in one line per op

// The dtypes of each op that declares an element list (torch names: "float32", ...), exported as
// cudalab._C.element_types.
inline std::map<std::string, std::vector<std::string>>& element_types() {
  static std::map<std::string, std::vector<std::string>> types;
  return types;
}

// One boxed kernel for every op's CPU key: the name comes from the op's schema ("cudalab::softmax").
inline void cpu_tensors_refused(const c10::OperatorHandle& op, torch::jit::Stack*) {
  std::string name = op.schema().name();
  name.replace(name.find("::"), 2, ".");
  TORCH_CHECK(false, name, ": CUDA tensors only, got cpu");
}

// Defines the op of `schema` (functional: new outputs, nothing mutated, which functionalization
// and torch.compile handle without aliasing annotations; float is a C++ double, int an int64_t),
// with `kernel` for CUDA tensors and a one-line refusal for CPU ones.
template <typename Kernel>
void define_op(torch::Library& m, const char* schema, Kernel* kernel) {
  const std::string full(schema);
  const std::string name = full.substr(0, full.find('('));
  m.def(schema);
  m.impl(name.c_str(), torch::dispatch(c10::DispatchKey::CUDA, kernel));
  m.impl(name.c_str(),
         torch::dispatch(c10::DispatchKey::CPU, torch::CppFunction::makeFromBoxedFunction<&cpu_tensors_refused>()));
}
// The same for an op whose first tensor takes the element types of `elements`.
template <typename Kernel, typename... Ts>
void define_op(torch::Library& m, const char* schema, Kernel* kernel, TypeList<Ts...> elements) {
  define_op(m, schema, kernel);
  std::vector<std::string>& names = element_types()[std::string(schema).substr(0, std::string(schema).find('('))];
  for (at::ScalarType t : scalar_types(elements)) names.push_back(c10::getDtypeNames(t).first);
}

}  // namespace cudalab::torch_ops
