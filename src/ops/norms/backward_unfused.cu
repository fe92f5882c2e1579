// Backward, unfused (the baseline the fused rung is measured against): three kernels, as separate
// framework ops would run them, for LayerNorm and RMSNorm.
//   1. dx: one 512-thread block per row, element loads, two passes over x, dy and gamma: the
//      first sums g*dy and g*dy*xhat (LayerNorm; RMSNorm only the second), the second writes
//      dx = rstd * (g*dy - mean(g*dy) - xhat * mean(g*dy*xhat)).
//   2. column partials: a thread per column and chunk of rows reads x and dy again and sums
//      dy*xhat (and dy) down its chunk; chunks = backward_partial_count(rows, features).
//   3. sum_column_partials adds the chunks per column, in order (dgamma and dbeta in one launch).
// The add_ forms' dresidual is added in kernel 1, in fp32 before dx's one rounding (an add pass
// of its own over the rounded dx, as eager PyTorch runs it, rounds twice and fails the check).
// What it costs against the minimum (x and dy read once): x and dy cross from memory twice (the
// second pass of kernel 1 mostly hits L1/L2), the statistics are read twice, and the column
// kernel's threads each walk a chunk of rows one element at a time.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

constexpr int kRowThreads = 512;
constexpr int kColumnThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kRowThreads) norm_backward_dx_kernel(NormBackwardArgs<T> a) {
  __shared__ float scratch[kRowThreads / kWarpSize + 1];
  const bool layer = a.norm == Norm::layer;
  const std::int64_t features = a.features;
  const float inverse_count = 1.0f / static_cast<float>(features);
  for (std::int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* x = a.x + row * features;
    const T* dy = a.dy + row * features;
    const float mean = layer ? a.mean[row] : 0.0f;
    const float rstd = a.rstd[row];
    float sum = 0.0f, sum_xhat = 0.0f;
    for (std::int64_t c = threadIdx.x; c < features; c += kRowThreads) {
      const float g_dy = to_float(a.gamma[c]) * to_float(dy[c]);
      sum += g_dy;
      sum_xhat = fmaf(g_dy, (to_float(x[c]) - mean) * rstd, sum_xhat);
    }
    const float c1 = layer ? group_sum<kRowThreads>(sum, scratch) * inverse_count : 0.0f;
    const float c2 = group_sum<kRowThreads>(sum_xhat, scratch) * inverse_count;
    T* dx = a.dx + row * features;
    const T* dresidual = a.dresidual != nullptr ? a.dresidual + row * features : nullptr;
    for (std::int64_t c = threadIdx.x; c < features; c += kRowThreads) {
      const float g_dy = to_float(a.gamma[c]) * to_float(dy[c]);
      const float xhat = (to_float(x[c]) - mean) * rstd;
      const float gradient = rstd * (g_dy - c1 - xhat * c2);
      dx[c] = from_float<T>(dresidual != nullptr ? gradient + to_float(dresidual[c]) : gradient);
    }
  }
}

// Chunk blockIdx.y of the rows, a column per thread: sum dy*xhat into partials[chunk][column] and,
// for LayerNorm, dy into partials[chunks + chunk][column].
template <typename T>
__global__ void __launch_bounds__(kColumnThreads)
    norm_column_partials_kernel(NormBackwardArgs<T> a, float* partials, std::int64_t chunks) {
  const std::int64_t column = static_cast<std::int64_t>(blockIdx.x) * kColumnThreads + threadIdx.x;
  if (column >= a.features) return;
  const bool layer = a.norm == Norm::layer;
  const std::int64_t chunk_rows = ceil_div(a.rows, chunks);
  const std::int64_t begin = blockIdx.y * chunk_rows;
  const std::int64_t end = std::min(a.rows, begin + chunk_rows);
  float dgamma = 0.0f, dbeta = 0.0f;
  for (std::int64_t row = begin; row < end; ++row) {
    const std::int64_t i = row * a.features + column;
    const float d = to_float(a.dy[i]);
    const float xhat = (to_float(a.x[i]) - (layer ? a.mean[row] : 0.0f)) * a.rstd[row];
    dgamma = fmaf(d, xhat, dgamma);
    dbeta += d;
  }
  partials[blockIdx.y * a.features + column] = dgamma;
  if (layer) partials[(chunks + blockIdx.y) * a.features + column] = dbeta;
}

}  // namespace

template <typename T>
void backward_unfused(const NormBackwardArgs<T>& a, cudaStream_t stream) {
  const std::string why = backward_shape_limits(a.rows, a.features);
  CUDALAB_REQUIRE(why.empty(), "backward_unfused: " + why);
  auto* partials =
      static_cast<float*>(workspace_of(a, backward_workspace_bytes(a.norm, a.rows, a.features), "backward_unfused"));
  const std::int64_t chunks = backward_partial_count(a.rows, a.features);
  if (a.rows > 0 && a.features > 0) {
    const std::int64_t blocks = std::min<std::int64_t>(a.rows, 1 << 30);
    norm_backward_dx_kernel<T><<<static_cast<int>(blocks), kRowThreads, 0, stream>>>(a);
    CUDALAB_CHECK_LAUNCH();
    const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(a.features, kColumnThreads)),
                    static_cast<unsigned>(chunks));
    norm_column_partials_kernel<T><<<grid, kColumnThreads, 0, stream>>>(a, partials, chunks);
    CUDALAB_CHECK_LAUNCH();
  }
  sum_column_partials(partials, chunks, chunks, a.features, a.dgamma, a.norm == Norm::layer ? a.dbeta : nullptr,
                      stream);
}

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_unfused, NormBackwardArgs)

}  // namespace cudalab::norms_variants
