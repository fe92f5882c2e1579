#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/arguments.hpp"
#include "core/workspace.hpp"
#include "cudalab/activations.hpp"
#include "cudalab/error.hpp"
#include "ops/bias_act/variants.hpp"

namespace cudalab {
namespace {

using bias_act_variants::BiasActArgs;
using bias_act_variants::BiasActBackwardArgs;

// The element count rows * features, after the sizes and the activation are checked.
std::int64_t checked_elements(const char* call, std::int64_t rows, std::int64_t features, Activation activation) {
  const std::string prefix = std::string(call) + ": ";
  CUDALAB_REQUIRE(rows >= 0 && features >= 0, prefix + "rows and features must be >= 0, got " + std::to_string(rows) +
                                                  " and " + std::to_string(features));
  const int value = static_cast<int>(activation);
  CUDALAB_REQUIRE(is_activation(value), prefix + "activation must be an Activation, got " + std::to_string(value));
  return checked_product(call, "rows * features", {rows, features});
}

template <typename T>
void forward(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t features, Activation activation,
             cudaStream_t stream) {
  const std::int64_t elements = checked_elements("bias_act", rows, features, activation);
  require_arrays("bias_act", {{x, elements, sizeof(T), "x"}, {bias, rows > 0 ? features : 0, sizeof(T), "bias"}},
                 {{y, elements, sizeof(T), "y"}});
  if (elements == 0) return;
  BiasActArgs<T> args;
  args.x = x;
  args.bias = bias;
  args.y = y;
  args.rows = rows;
  args.features = features;
  args.activation = activation;
  // `vectorized` at every width: in the bench (docs/activations.md) it ran at the copy rate at 16384 x
  // 8192 and was ahead of `tiled` at every width of the sweep.
  bias_act_variants::vectorized(args, stream);
}

// The fused rung is the backward's only candidate: the naive one and the unfused baseline read dx
// back, and the naive one runs `features` threads in its column loop. `scratch` is the caller's
// workspace or the stream-ordered allocator.
template <typename T>
void backward(const T* x, const T* bias, const T* dy, T* dx, T* dbias, std::int64_t rows, std::int64_t features,
              Activation activation, Workspace& scratch, cudaStream_t stream) {
  const std::int64_t elements = checked_elements("bias_act_backward", rows, features, activation);
  require_arrays("bias_act_backward",
                 {{x, elements, sizeof(T), "x"},
                  {bias, rows > 0 ? features : 0, sizeof(T), "bias"},
                  {dy, elements, sizeof(T), "dy"}},
                 {{dx, elements, sizeof(T), "dx"}, {dbias, features, sizeof(T), "dbias"}});
  if (features == 0) return;
  BiasActBackwardArgs<T> args;
  args.x = x;
  args.bias = bias;
  args.dy = dy;
  args.dx = dx;
  args.dbias = dbias;
  args.rows = rows;
  args.features = features;
  args.activation = activation;
  args.workspace_bytes = bias_act_variants::backward_workspace_bytes(rows, features);
  args.workspace = scratch.reserve(args.workspace_bytes);
  bias_act_variants::fused_backward(args, stream);
}

// The stream-ordered allocator's scratch (handed back on the stream when the call ends, also when
// a launch throws), or a caller's workspace (checked when the call reserves it).
template <typename T>
void backward(const T* x, const T* bias, const T* dy, T* dx, T* dbias, std::int64_t rows, std::int64_t features,
              Activation activation, cudaStream_t stream) {
  StreamOrderedWorkspace scratch(stream);
  backward(x, bias, dy, dx, dbias, rows, features, activation, scratch, stream);
}
template <typename T>
void backward(const T* x, const T* bias, const T* dy, T* dx, T* dbias, std::int64_t rows, std::int64_t features,
              Activation activation, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  CallerWorkspace scratch(workspace, workspace_bytes, "bias_act_backward", "bias_act_backward_workspace_bytes");
  backward(x, bias, dy, dx, dbias, rows, features, activation, scratch, stream);
}

}  // namespace

template <typename T, typename>
void bias_act(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t features, Activation activation,
              cudaStream_t stream) {
  forward(x, bias, y, rows, features, activation, stream);
}

std::size_t bias_act_backward_workspace_bytes(std::int64_t rows, std::int64_t features) {
  CUDALAB_REQUIRE(rows >= 0 && features >= 0, "bias_act_backward_workspace_bytes: rows and features must be >= 0");
  return bias_act_variants::backward_workspace_bytes(rows, features);
}

template <typename T, typename>
void bias_act_backward(const T* x, const T* bias, const T* dy, T* dx, T* dbias, std::int64_t rows,
                       std::int64_t features, Activation activation, cudaStream_t stream) {
  backward(x, bias, dy, dx, dbias, rows, features, activation, stream);
}

template <typename T, typename>
void bias_act_backward(const T* x, const T* bias, const T* dy, T* dx, T* dbias, std::int64_t rows,
                       std::int64_t features, Activation activation, void* workspace, std::size_t workspace_bytes,
                       cudaStream_t stream) {
  backward(x, bias, dy, dx, dbias, rows, features, activation, workspace, workspace_bytes, stream);
}

template <typename T, typename>
void bias_gradient(const T* dy, T* dbias, std::int64_t rows, std::int64_t features, void* workspace,
                   std::size_t workspace_bytes, cudaStream_t stream) {
  CUDALAB_REQUIRE(rows >= 0 && features >= 0, "bias_gradient: rows and features must be >= 0, got " +
                                                  std::to_string(rows) + " and " + std::to_string(features));
  const std::int64_t elements = checked_product("bias_gradient", "rows * features", {rows, features});
  require_arrays("bias_gradient", {{dy, elements, sizeof(T), "dy"}}, {{dbias, features, sizeof(T), "dbias"}});
  if (features == 0) return;
  CallerWorkspace scratch(workspace, workspace_bytes, "bias_gradient", "bias_act_backward_workspace_bytes");
  const std::size_t bytes = bias_act_variants::backward_workspace_bytes(rows, features);
  bias_act_variants::column_sums(dy, dbias, rows, features, static_cast<float*>(scratch.reserve(bytes)), stream);
}

#define CUDALAB_BIAS_ACT_ENTRIES(T, a, b)                                                                              \
  template void bias_act(const T*, const T*, T*, std::int64_t, std::int64_t, Activation, cudaStream_t);                \
  template void bias_act_backward(const T*, const T*, const T*, T*, T*, std::int64_t, std::int64_t, Activation,        \
                                  cudaStream_t);                                                                       \
  template void bias_act_backward(const T*, const T*, const T*, T*, T*, std::int64_t, std::int64_t, Activation, void*, \
                                  std::size_t, cudaStream_t);                                                          \
  template void bias_gradient(const T*, T*, std::int64_t, std::int64_t, void*, std::size_t, cudaStream_t);
CUDALAB_BIAS_ACT_ELEMENTS(CUDALAB_BIAS_ACT_ENTRIES, , )

}  // namespace cudalab
