#include "cudalab/norms.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/norms/norms.cuh"
#include "ops/norms/variants.hpp"

namespace cudalab {
namespace {

using norms_variants::Norm;
using norms_variants::NormBackwardArgs;
using norms_variants::NormForwardArgs;

// The call's name, for messages: `add` for the add_ forms.
const char* name_of(Norm norm, bool backward, bool add = false) {
  if (add) {
    if (norm == Norm::layer) return backward ? "add_layer_norm_backward" : "add_layer_norm";
    return backward ? "add_rms_norm_backward" : "add_rms_norm";
  }
  if (norm == Norm::layer) return backward ? "layer_norm_backward" : "layer_norm";
  return backward ? "rms_norm_backward" : "rms_norm";
}

// A pointer the sizes need: not null, aligned to its element.
template <typename T>
void require_pointer(const T* p, const char* call, const char* what) {
  CUDALAB_REQUIRE(p != nullptr, std::string(call) + ": " + what + " must be a device pointer, got null");
  CUDALAB_REQUIRE(reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0,
                  std::string(call) + ": " + what + " must be aligned to its element");
}

// A pointer that may be null (then unused), else aligned to its element.
template <typename T>
void require_optional_pointer(const T* p, const char* call, const char* what) {
  if (p != nullptr) require_pointer(p, call, what);
}

enum class ForwardRung { vector_registers, cluster, block_per_row };

// Chosen by the bench (docs/norms.md has the numbers): vector_registers wherever it holds the row
// (to 32768 features), well ahead of the cluster rung at 1024-16384 features; the cluster rung
// beyond, the only one-read rung left, about twice block_per_row at 65536 and 262144 features;
// block_per_row where neither runs.
ForwardRung forward_rung(std::int64_t features, bool vector_aligned, int compute_capability) {
  if (norms_variants::vector_registers_limits(features, vector_aligned).empty()) return ForwardRung::vector_registers;
  if (norms_variants::cluster_limits(features, vector_aligned, compute_capability).empty()) return ForwardRung::cluster;
  return ForwardRung::block_per_row;
}

// Whether every array of the forward is read and written in 16-byte vectors.
template <typename T>
bool forward_vector_aligned(const NormForwardArgs<T>& a) {
  return norms_variants::rows_vector_aligned(a.features, sizeof(T)) && is_aligned16(a.x) && is_aligned16(a.y) &&
         is_aligned16(a.gamma) && (a.norm == Norm::rms || is_aligned16(a.beta)) && is_aligned16(a.residual) &&
         is_aligned16(a.residual_out);
}

}  // namespace

namespace norms_variants {

template <typename T>
void fastest_forward(const NormForwardArgs<T>& a, cudaStream_t stream) {
  switch (forward_rung(a.features, forward_vector_aligned(a), current_gpu().compute_capability)) {
    case ForwardRung::cluster: return cluster(a, stream);
    case ForwardRung::vector_registers: return vector_registers(a, stream);
    case ForwardRung::block_per_row: return block_per_row(a, stream);
  }
}
CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, fastest_forward, NormForwardArgs)

}  // namespace norms_variants

namespace {

// The add_ forms take the fused rung wherever it holds the row (to 32768 features), else the add
// as a pass of its own before the plain norm.
template <typename T>
void forward(const NormForwardArgs<T>& a, cudaStream_t stream) {
  const bool add = a.residual != nullptr || a.residual_out != nullptr;
  const char* call = name_of(a.norm, false, add);
  CUDALAB_REQUIRE(a.rows >= 0 && a.features >= 0, std::string(call) + ": rows and features must be >= 0, got " +
                                                      std::to_string(a.rows) + " and " + std::to_string(a.features));
  CUDALAB_REQUIRE(std::isfinite(a.eps) && a.eps > 0.0f,
                  std::string(call) + ": eps must be positive and finite, got " + std::to_string(a.eps));
  const std::string why = norms_variants::forward_shape_limits(a.rows, a.features);
  CUDALAB_REQUIRE(why.empty(), std::string(call) + ": " + why);
  checked_product(call, "rows * features", {a.rows, a.features});
  if (a.rows == 0) return;
  require_pointer(a.x, call, "x");
  require_pointer(a.gamma, call, "gamma");
  require_pointer(a.y, call, "y");
  if (a.norm == Norm::layer) require_pointer(a.beta, call, "beta");
  require_optional_pointer(a.mean, call, "mean");
  require_optional_pointer(a.rstd, call, "rstd");
  if (!add) return norms_variants::fastest_forward(a, stream);
  require_pointer(a.residual, call, "residual");
  require_pointer(a.residual_out, call, "residual_out");
  if (norms_variants::vector_registers_limits(a.features, forward_vector_aligned(a)).empty())
    return norms_variants::vector_registers(a, stream);
  norms_variants::add_unfused(a, stream);
}

// The fused rung (one read of x and dy) wherever it runs, up to 16384 features, well ahead of the
// unfused kernels in the bench (docs/norms.md); wider rows take the unfused ones.
// `scratch` is the caller's workspace or the stream-ordered allocator.
template <typename T>
void backward(NormBackwardArgs<T> a, Workspace& scratch, cudaStream_t stream, bool add = false) {
  const char* call = name_of(a.norm, true, add);
  CUDALAB_REQUIRE(a.rows >= 0 && a.features >= 0, std::string(call) + ": rows and features must be >= 0, got " +
                                                      std::to_string(a.rows) + " and " + std::to_string(a.features));
  const std::string why = norms_variants::backward_shape_limits(a.rows, a.features);
  CUDALAB_REQUIRE(why.empty(), std::string(call) + ": " + why);
  checked_product(call, "rows * features", {a.rows, a.features});
  if (a.features == 0) return;
  require_pointer(a.dgamma, call, "dgamma");
  if (a.norm == Norm::layer) require_pointer(a.dbeta, call, "dbeta");
  if (a.rows > 0) {
    require_pointer(a.x, call, "x");
    require_pointer(a.dy, call, "dy");
    require_pointer(a.gamma, call, "gamma");
    require_pointer(a.rstd, call, "rstd");
    require_pointer(a.dx, call, "dx");
    if (a.norm == Norm::layer) require_pointer(a.mean, call, "mean");
    if (add) require_pointer(a.dresidual, call, "dresidual");
  }
  a.workspace_bytes = norms_variants::backward_workspace_bytes(a.norm, a.rows, a.features);
  a.workspace = scratch.reserve(a.workspace_bytes);
  // staged where it takes the row (vector-aligned, up to 8192 16-bit or 4096 f32 features): 1.04-1.56x
  // fused at model widths (docs/norms.md); fused to 16384 features; unfused past that.
  if (norms_variants::backward_staged_limits(a.features, sizeof(T), norms_variants::backward_arrays_aligned16(a))
          .empty()) {
    norms_variants::backward_staged(a, stream);
  } else if (norms_variants::backward_fused_limits(a.features).empty()) {
    norms_variants::backward_fused(a, stream);
  } else {
    norms_variants::backward_unfused(a, stream);
  }
}

std::size_t workspace_bytes(Norm norm, std::int64_t rows, std::int64_t features) {
  CUDALAB_REQUIRE(rows >= 0 && features >= 0, std::string(name_of(norm, true)) +
                                                  "_workspace_bytes: rows and features must be >= 0, got " +
                                                  std::to_string(rows) + " and " + std::to_string(features));
  return norms_variants::backward_workspace_bytes(norm, rows, features);
}

// A caller's workspace for `norm`'s backward (checked when the call reserves it).
CallerWorkspace caller_workspace(Norm norm, void* workspace, std::size_t bytes) {
  return CallerWorkspace(
      workspace, bytes, name_of(norm, true),
      norm == Norm::layer ? "layer_norm_backward_workspace_bytes" : "rms_norm_backward_workspace_bytes");
}

// The forward's arguments; beta and mean LayerNorm's (null for RMSNorm).
template <typename T>
NormForwardArgs<T> forward_args(Norm norm, const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd,
                                std::int64_t rows, std::int64_t features, float eps) {
  NormForwardArgs<T> a;
  a.norm = norm;
  a.x = x;
  a.gamma = gamma;
  a.beta = beta;
  a.y = y;
  a.mean = mean;
  a.rstd = rstd;
  a.rows = rows;
  a.features = features;
  a.eps = eps;
  return a;
}

// The add_ form of `a`: h = x + residual written to residual_out, then normalized.
template <typename T>
NormForwardArgs<T> with_residual(NormForwardArgs<T> a, const T* residual, T* residual_out) {
  a.residual = residual;
  a.residual_out = residual_out;
  return a;
}

}  // namespace

template <typename T, typename>
void layer_norm(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd, std::int64_t rows,
                std::int64_t features, float eps, cudaStream_t stream) {
  forward(forward_args(Norm::layer, x, gamma, beta, y, mean, rstd, rows, features, eps), stream);
}

template <typename T, typename>
void rms_norm(const T* x, const T* gamma, T* y, float* rstd, std::int64_t rows, std::int64_t features, float eps,
              cudaStream_t stream) {
  forward(forward_args<T>(Norm::rms, x, gamma, nullptr, y, nullptr, rstd, rows, features, eps), stream);
}

template <typename T, typename>
void add_layer_norm(const T* x, const T* residual, const T* gamma, const T* beta, T* y, T* residual_out, float* mean,
                    float* rstd, std::int64_t rows, std::int64_t features, float eps, cudaStream_t stream) {
  forward(with_residual(forward_args(Norm::layer, x, gamma, beta, y, mean, rstd, rows, features, eps), residual,
                        residual_out),
          stream);
}

template <typename T, typename>
void add_rms_norm(const T* x, const T* residual, const T* gamma, T* y, T* residual_out, float* rstd, std::int64_t rows,
                  std::int64_t features, float eps, cudaStream_t stream) {
  forward(with_residual(forward_args<T>(Norm::rms, x, gamma, nullptr, y, nullptr, rstd, rows, features, eps), residual,
                        residual_out),
          stream);
}

std::size_t layer_norm_backward_workspace_bytes(std::int64_t rows, std::int64_t features) {
  return workspace_bytes(Norm::layer, rows, features);
}
std::size_t rms_norm_backward_workspace_bytes(std::int64_t rows, std::int64_t features) {
  return workspace_bytes(Norm::rms, rows, features);
}

namespace {

template <typename T>
NormBackwardArgs<T> layer_norm_backward_args(const T* x, const T* dy, const T* gamma, const float* mean,
                                             const float* rstd, T* dx, T* dgamma, T* dbeta, std::int64_t rows,
                                             std::int64_t features) {
  NormBackwardArgs<T> a;
  a.norm = Norm::layer;
  a.x = x;
  a.dy = dy;
  a.gamma = gamma;
  a.mean = mean;
  a.rstd = rstd;
  a.dx = dx;
  a.dgamma = dgamma;
  a.dbeta = dbeta;
  a.rows = rows;
  a.features = features;
  return a;
}

template <typename T>
NormBackwardArgs<T> rms_norm_backward_args(const T* x, const T* dy, const T* gamma, const float* rstd, T* dx, T* dgamma,
                                           std::int64_t rows, std::int64_t features) {
  NormBackwardArgs<T> a;
  a.norm = Norm::rms;
  a.x = x;
  a.dy = dy;
  a.gamma = gamma;
  a.rstd = rstd;
  a.dx = dx;
  a.dgamma = dgamma;
  a.rows = rows;
  a.features = features;
  return a;
}

}  // namespace

template <typename T, typename>
void layer_norm_backward(const T* x, const T* dy, const T* gamma, const float* mean, const float* rstd, T* dx,
                         T* dgamma, T* dbeta, std::int64_t rows, std::int64_t features, cudaStream_t stream) {
  StreamOrderedWorkspace scratch(stream);
  backward(layer_norm_backward_args(x, dy, gamma, mean, rstd, dx, dgamma, dbeta, rows, features), scratch, stream);
}
template <typename T, typename>
void layer_norm_backward(const T* x, const T* dy, const T* gamma, const float* mean, const float* rstd, T* dx,
                         T* dgamma, T* dbeta, std::int64_t rows, std::int64_t features, void* workspace,
                         std::size_t workspace_bytes, cudaStream_t stream) {
  CallerWorkspace scratch = caller_workspace(Norm::layer, workspace, workspace_bytes);
  backward(layer_norm_backward_args(x, dy, gamma, mean, rstd, dx, dgamma, dbeta, rows, features), scratch, stream);
}

template <typename T, typename>
void rms_norm_backward(const T* x, const T* dy, const T* gamma, const float* rstd, T* dx, T* dgamma, std::int64_t rows,
                       std::int64_t features, cudaStream_t stream) {
  StreamOrderedWorkspace scratch(stream);
  backward(rms_norm_backward_args(x, dy, gamma, rstd, dx, dgamma, rows, features), scratch, stream);
}
template <typename T, typename>
void rms_norm_backward(const T* x, const T* dy, const T* gamma, const float* rstd, T* dx, T* dgamma, std::int64_t rows,
                       std::int64_t features, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  CallerWorkspace scratch = caller_workspace(Norm::rms, workspace, workspace_bytes);
  backward(rms_norm_backward_args(x, dy, gamma, rstd, dx, dgamma, rows, features), scratch, stream);
}

template <typename T, typename>
void add_layer_norm_backward(const T* h, const T* dy, const T* dresidual, const T* gamma, const float* mean,
                             const float* rstd, T* dx, T* dgamma, T* dbeta, std::int64_t rows, std::int64_t features,
                             void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  CallerWorkspace scratch = caller_workspace(Norm::layer, workspace, workspace_bytes);
  NormBackwardArgs<T> a = layer_norm_backward_args(h, dy, gamma, mean, rstd, dx, dgamma, dbeta, rows, features);
  a.dresidual = dresidual;
  backward(a, scratch, stream, true);
}

template <typename T, typename>
void add_rms_norm_backward(const T* h, const T* dy, const T* dresidual, const T* gamma, const float* rstd, T* dx,
                           T* dgamma, std::int64_t rows, std::int64_t features, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream) {
  CallerWorkspace scratch = caller_workspace(Norm::rms, workspace, workspace_bytes);
  NormBackwardArgs<T> a = rms_norm_backward_args(h, dy, gamma, rstd, dx, dgamma, rows, features);
  a.dresidual = dresidual;
  backward(a, scratch, stream, true);
}

#define CUDALAB_NORM_ENTRIES(T, a, b)                                                                               \
  template void layer_norm(const T*, const T*, const T*, T*, float*, float*, std::int64_t, std::int64_t, float,     \
                           cudaStream_t);                                                                           \
  template void layer_norm_backward(const T*, const T*, const T*, const float*, const float*, T*, T*, T*,           \
                                    std::int64_t, std::int64_t, cudaStream_t);                                      \
  template void layer_norm_backward(const T*, const T*, const T*, const float*, const float*, T*, T*, T*,           \
                                    std::int64_t, std::int64_t, void*, std::size_t, cudaStream_t);                  \
  template void rms_norm(const T*, const T*, T*, float*, std::int64_t, std::int64_t, float, cudaStream_t);          \
  template void rms_norm_backward(const T*, const T*, const T*, const float*, T*, T*, std::int64_t, std::int64_t,   \
                                  cudaStream_t);                                                                    \
  template void rms_norm_backward(const T*, const T*, const T*, const float*, T*, T*, std::int64_t, std::int64_t,   \
                                  void*, std::size_t, cudaStream_t);                                                \
  template void add_layer_norm(const T*, const T*, const T*, const T*, T*, T*, float*, float*, std::int64_t,        \
                               std::int64_t, float, cudaStream_t);                                                  \
  template void add_rms_norm(const T*, const T*, const T*, T*, T*, float*, std::int64_t, std::int64_t, float,       \
                             cudaStream_t);                                                                         \
  template void add_layer_norm_backward(const T*, const T*, const T*, const T*, const float*, const float*, T*, T*, \
                                        T*, std::int64_t, std::int64_t, void*, std::size_t, cudaStream_t);          \
  template void add_rms_norm_backward(const T*, const T*, const T*, const T*, const float*, T*, T*, std::int64_t,   \
                                      std::int64_t, void*, std::size_t, cudaStream_t);
CUDALAB_NORM_ELEMENTS(CUDALAB_NORM_ENTRIES, , )

}  // namespace cudalab
