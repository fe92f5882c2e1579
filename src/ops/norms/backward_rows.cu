// Backward, fused, several rows a CTA: the `fused` rung's arithmetic with two of its costs at model
// widths removed. At 8192 x 1024 `fused` runs about 1,600 one-row CTAs; each writes a row of
// column partials per output (13 MB written and read again at that shape, a fifth of the traffic),
// and each row's loads start only after the last row's dx is out. Here a 512-thread CTA holds
// 512 / kGroup row groups; each thread owns one 16-byte vector of columns, adds their column sums
// (dy * xhat, dy) into its own words of a shared array across all its rows, and loads the next
// row's x and dy before it finishes the current one. A group's two row sums go through a
// double-buffered shared array behind one named barrier of the group's threads, so groups never
// wait for each other. At the end each CTA adds its groups' column sums in group order into one
// row of partials, and sum_column_partials adds the rows in order: deterministic, with two CTAs an
// SM, a sixth of `fused`'s partials. Vector-aligned rows of 32 to 512 16-byte vectors only
// (256-4096 features in 16-bit types, 128-2048 in f32).
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/launch_attributes.hpp"
#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

constexpr int kRowsCta = 512;

// One thread's 16-byte vectors of x and dy in one row, and the row's statistics.
template <typename T>
struct RowVectors {
  Vector16<T> x, dy;
  float mean, rstd;
};

template <typename T>
__device__ __forceinline__ void load_row(const NormBackwardArgs<T>& a, std::int64_t row, std::int64_t column,
                                         bool layer, RowVectors<T>& r) {
  const std::int64_t at = row * a.features + column;
  r.x = load_vector16(a.x + at);
  r.dy = load_vector16(a.dy + at);
  r.mean = layer ? a.mean[row] : 0.0f;
  r.rstd = a.rstd[row];
}

// Two CTAs an SM (64 registers a thread): 1024 threads' next rows in flight.
template <typename T, int kGroup>
__global__ void __launch_bounds__(kRowsCta, 2)
    norm_backward_rows_kernel(NormBackwardArgs<T> a, float* partials, std::int64_t partial_rows) {
  constexpr int V = kVector16<T>;
  constexpr int kGroups = kRowsCta / kGroup;
  constexpr int kGroupWarps = kGroup / kWarpSize;
  // [parity][group][warp of the group][2]: the warps' row sums, double-buffered by row parity.
  __shared__ float row_sums[2][kGroups][kGroupWarps][2];
  extern __shared__ float4 shared_column_sums[];  // [group][outputs][features] floats
  float* const column_sums = reinterpret_cast<float*>(shared_column_sums);
  const bool layer = a.norm == Norm::layer;
  const int group = static_cast<int>(threadIdx.x) / kGroup;
  const int lane = static_cast<int>(threadIdx.x) % kGroup;
  const int warp = lane / kWarpSize;
  const std::int64_t column = static_cast<std::int64_t>(lane) * V;  // this thread's first column
  const float inverse_count = 1.0f / static_cast<float>(a.features);
  const int outputs = layer ? 2 : 1;
  const auto features = static_cast<int>(a.features);
  // This thread's columns of its group's sums of dy * xhat and dy: only it touches them until the end.
  float* const dgamma = column_sums + (group * outputs) * features + column;
  float* const dbeta = dgamma + features;  // LayerNorm only
#pragma unroll
  for (int e = 0; e < V; ++e) {
    dgamma[e] = 0.0f;
    if (layer) dbeta[e] = 0.0f;
  }
  const Vector16<T> gamma = load_vector16(a.gamma + column);  // widened where used: 4 registers, not 8
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kGroups;
  std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kGroups + group;
  RowVectors<T> next;
  if (row < a.rows) load_row(a, row, column, layer, next);
  for (int parity = 0; row < a.rows; row += step, parity ^= 1) {
    const RowVectors<T> now = next;
    if (row + step < a.rows) load_row(a, row + step, column, layer, next);
    // dresidual is loaded a row late but before the row's sums, which hide it (holding it a row
    // ahead too spills at 64 registers).
    Vector16<T> dresidual;
    if (a.dresidual != nullptr) dresidual = load_vector16(a.dresidual + row * a.features + column);
    // xhat and gamma * dy are formed again for dx below rather than held: registers for the prefetch.
    // Column sums in shared memory, four columns a 16-byte access (registers go to the next row).
    float sum = 0.0f, sum_xhat = 0.0f;
#pragma unroll
    for (int e0 = 0; e0 < V; e0 += 4) {
      float4 dg = *reinterpret_cast<float4*>(dgamma + e0);
      float4 db = layer ? *reinterpret_cast<float4*>(dbeta + e0) : float4{};
      float* const dg_at = &dg.x;
      float* const db_at = &db.x;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int e = e0 + i;
        const float dy = to_float(now.dy[e]);
        const float xhat = (to_float(now.x[e]) - now.mean) * now.rstd;
        const float g_dy = to_float(gamma[e]) * dy;
        dg_at[i] = fmaf(dy, xhat, dg_at[i]);
        db_at[i] += dy;
        sum += g_dy;
        sum_xhat = fmaf(g_dy, xhat, sum_xhat);
      }
      *reinterpret_cast<float4*>(dgamma + e0) = dg;
      if (layer) *reinterpret_cast<float4*>(dbeta + e0) = db;
    }
    sum = warp_sum(sum);
    sum_xhat = warp_sum(sum_xhat);
    if (lane % kWarpSize == 0) {
      row_sums[parity][group][warp][0] = sum;
      row_sums[parity][group][warp][1] = sum_xhat;
    }
    if constexpr (kGroupWarps > 1) {
      // The group's threads alone (ids 1-8; 0 is __syncthreads'): groups run apart.
      asm volatile("bar.sync %0, %1;" ::"r"(group + 1), "r"(kGroup) : "memory");
    } else {
      __syncwarp();
    }
    float c1 = 0.0f, c2 = 0.0f;
#pragma unroll
    for (int w = 0; w < kGroupWarps; ++w) {  // in warp order: every thread of the group gets the same bits
      c1 += row_sums[parity][group][w][0];
      c2 += row_sums[parity][group][w][1];
    }
    c1 = layer ? c1 * inverse_count : 0.0f;
    c2 *= inverse_count;
    Vector16<T> out;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float xhat = (to_float(now.x[e]) - now.mean) * now.rstd;
      float value = now.rstd * (to_float(gamma[e]) * to_float(now.dy[e]) - c1 - xhat * c2);
      if (a.dresidual != nullptr) value += to_float(dresidual[e]);
      out[e] = from_float<T>(value);
    }
    store_vector16(a.dx + row * a.features + column, out);
  }
  // The CTA's column sums: its groups' in group order, one row of partials.
  __syncthreads();
  for (int c = static_cast<int>(threadIdx.x); c < features; c += kRowsCta)
    for (int o = 0; o < outputs; ++o) {
      float total = 0.0f;
#pragma unroll
      for (int h = 0; h < kGroups; ++h) total += column_sums[(h * outputs + o) * features + c];
      partials[(o * partial_rows + blockIdx.x) * a.features + c] = total;
    }
}

template <typename T, int kGroup>
void launch(const NormBackwardArgs<T>& a, float* partials, cudaStream_t stream) {
  constexpr int kGroups = kRowsCta / kGroup;
  auto* kernel = norm_backward_rows_kernel<T, kGroup>;
  const int outputs = a.norm == Norm::layer ? 2 : 1;
  const auto shared_bytes = static_cast<std::size_t>(kGroups * outputs * a.features) * sizeof(float);
  set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), shared_bytes);
  const std::int64_t partial_rows = backward_partial_count(a.rows, a.features);
  const std::int64_t wanted = std::min(partial_rows, ceil_div<std::int64_t>(a.rows, kGroups));
  const int blocks = resident_grid_size(kernel, kRowsCta, wanted * kRowsCta, shared_bytes);
  kernel<<<blocks, kRowsCta, shared_bytes, stream>>>(a, partials, partial_rows);
  CUDALAB_CHECK_LAUNCH();
  sum_column_partials(partials, partial_rows, blocks, a.features, a.dgamma, a.norm == Norm::layer ? a.dbeta : nullptr,
                      stream);
}

// kGroup threads a row, one 16-byte vector each. (Two vectors a thread, for 1024-vector rows,
// spill the next row's registers at 512 threads.)
template <typename T>
void launch_for_width(const NormBackwardArgs<T>& a, std::int64_t vectors, float* partials, cudaStream_t stream) {
  switch (vectors) {
    case 32: return launch<T, 32>(a, partials, stream);
    case 64: return launch<T, 64>(a, partials, stream);
    case 128: return launch<T, 128>(a, partials, stream);
    case 256: return launch<T, 256>(a, partials, stream);
    default: return launch<T, 512>(a, partials, stream);
  }
}

}  // namespace

std::string backward_rows_limits(std::int64_t features, std::size_t element_bytes, bool vector_aligned) {
  const std::int64_t vectors = features * static_cast<std::int64_t>(element_bytes) / 16;
  const bool width = features * static_cast<std::int64_t>(element_bytes) % 16 == 0 &&
                     (vectors == 32 || vectors == 64 || vectors == 128 || vectors == 256 || vectors == 512);
  if (!width)
    return "takes rows of 32, 64, 128, 256 or 512 16-byte vectors (256-4096 features in 16-bit types, 128-2048 "
           "in f32); this row has " +
           std::to_string(features) + " features";
  if (!vector_aligned) return "takes 16-byte aligned tensors";
  return "";
}

template <typename T>
void backward_rows(const NormBackwardArgs<T>& a, cudaStream_t stream) {
  const std::string why = backward_shape_limits(a.rows, a.features) +
                          backward_rows_limits(a.features, sizeof(T), backward_arrays_aligned16(a));
  CUDALAB_REQUIRE(why.empty(), "backward_rows: " + why);
  auto* partials =
      static_cast<float*>(workspace_of(a, backward_workspace_bytes(a.norm, a.rows, a.features), "backward_rows"));
  if (a.rows == 0) {
    sum_column_partials(partials, 0, 0, a.features, a.dgamma, a.norm == Norm::layer ? a.dbeta : nullptr, stream);
    return;
  }
  launch_for_width<T>(a, a.features / kVector16<T>, partials, stream);
}

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_rows, NormBackwardArgs)

}  // namespace cudalab::norms_variants
