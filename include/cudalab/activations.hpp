// Bias + activation, the epilogue of a linear layer: y = act(x + bias) over a row-major
// [rows, features] tensor, bias[features] broadcast over the rows, and its backward: dx = dy *
// act'(x + bias) and dbias = the sum of dx over the rows. fp32, fp16 and bf16 tensors; the
// arithmetic inside is fp32 (x + bias is formed in fp32, never rounded to the tensor's type).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

// The element types bias_act takes (T below); any other fails to compile.
#define CUDALAB_BIAS_ACT_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using BiasActElements = CUDALAB_ELEMENT_LIST(CUDALAB_BIAS_ACT_ELEMENTS);

// The values are the registry's `activation` parameter; the names, the PyTorch ops' argument.
enum class Activation {
  relu = 0,       // max(v, 0); its derivative at v == 0 is taken as 0, as PyTorch's is
  gelu_tanh = 1,  // 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), PyTorch's approximate="tanh"
  gelu_erf = 2,   // 0.5 v (1 + erf(v / sqrt(2))), PyTorch's default GELU
  silu = 3,       // v sigmoid(v), PyTorch's F.silu (Swish)
};

// Every activation with its name, in value order: the one list that checks and messages use.
struct ActivationName {
  Activation activation;
  const char* name;
};
inline constexpr ActivationName kActivationNames[] = {{Activation::relu, "relu"},
                                                      {Activation::gelu_tanh, "gelu_tanh"},
                                                      {Activation::gelu_erf, "gelu_erf"},
                                                      {Activation::silu, "silu"}};
inline constexpr int kActivationCount = sizeof(kActivationNames) / sizeof(kActivationNames[0]);

// Whether `value` is an Activation's value.
inline constexpr bool is_activation(long long value) { return value >= 0 && value < kActivationCount; }

// Every value with its name, for messages: "0 (relu), 1 (gelu_tanh), 2 (gelu_erf) or 3 (silu)".
inline std::string activation_values() {
  std::string values;
  for (int i = 0; i < kActivationCount; ++i) {
    if (i > 0) values += i + 1 == kActivationCount ? " or " : ", ";
    values += std::to_string(i) + " (" + kActivationNames[i].name + ")";
  }
  return values;
}

// y = act(x + bias), asynchronously on `stream`. x and y are rows x features, dense and
// row-major; bias holds `features` values. Device pointers aligned to their element size, of any
// other alignment (16-byte aligned x, y and bias with features a multiple of 16 bytes' worth of
// elements take the fastest kernel; others a vector kernel that gathers the bias, or a scalar
// one); y must not overlap x or bias. rows == 0 or features == 0 does nothing.
// Accuracy: the fp32 result is within a few fp32 ulps of the exact activation of fl32(x + bias)
// (GELU through fast exp and reciprocal instructions, see docs/activations.md), then rounded once
// to the output type.
// Throws cudalab::Error: invalid_argument for negative sizes, an activation outside the enum,
// null or misaligned pointers with a non-empty tensor, or overlapping outputs; cuda when a launch
// fails.
template <typename T, typename = RequireElement<T, BiasActElements>>
void bias_act(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t features, Activation activation,
              cudaStream_t stream = nullptr);

// Scratch bytes bias_act_backward needs at this shape (fp32 column partial sums, one row of
// `features` per block of rows), for any element type.
std::size_t bias_act_backward_workspace_bytes(std::int64_t rows, std::int64_t features);

// dx = dy * act'(x + bias) (rows x features, like x) and dbias[j] = sum over the rows of dx[., j]
// (`features` values), asynchronously on `stream`. dbias sums the fp32 values of dx (before they
// are rounded to the output type) in fp32, in a fixed order: the same inputs give the same bits
// on every run (no atomics). rows == 0 writes dbias = 0. Outputs must not overlap each other or
// the inputs; alignment as for bias_act.
// Scratch memory of bias_act_backward_workspace_bytes(rows, features) comes from the
// stream-ordered allocator (cudaMallocAsync) and is released on the stream.
// Throws cudalab::Error as bias_act does.
template <typename T, typename = RequireElement<T, BiasActElements>>
void bias_act_backward(const T* x, const T* bias, const T* dy, T* dx, T* dbias, std::int64_t rows,
                       std::int64_t features, Activation activation, cudaStream_t stream = nullptr);

// The same with the caller's scratch: `workspace` is device memory of at least
// bias_act_backward_workspace_bytes(rows, features) bytes, 16-byte aligned, which the call may use
// until it is done on the stream. A smaller buffer is refused (invalid_argument).
template <typename T, typename = RequireElement<T, BiasActElements>>
void bias_act_backward(const T* x, const T* bias, const T* dy, T* dx, T* dbias, std::int64_t rows,
                       std::int64_t features, Activation activation, void* workspace, std::size_t workspace_bytes,
                       cudaStream_t stream = nullptr);

// dbias[j] = the sum over the rows of dy[., j] (rows x features in, `features` values out): the bias
// gradient of a product with a bias broadcast over its rows (a Linear layer's), summed in fp32 in a
// fixed order and rounded once, with the caller's scratch of bias_act_backward_workspace_bytes(rows,
// features) bytes. rows == 0 writes zeros. Throws as bias_act_backward does.
template <typename T, typename = RequireElement<T, BiasActElements>>
void bias_gradient(const T* dy, T* dbias, std::int64_t rows, std::int64_t features, void* workspace,
                   std::size_t workspace_bytes, cudaStream_t stream = nullptr);

}  // namespace cudalab
