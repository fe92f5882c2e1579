// Backward, fused: one pass over x and dy for dx, dgamma and dbeta, for LayerNorm and RMSNorm.
// A resident grid of row groups (a warp per row up to 512 features, four to a CTA; one block of
// 128-1024 threads per row up to 16384) walks the rows. A group loads its row's x and dy once,
// with 16-byte vectors, into registers (16 values of each a thread at most); per element it forms
// xhat = (x - mean) * rstd and g*dy, keeps them in place of x and dy, and adds dy*xhat and dy into
// its own columns of a shared-memory array (every column belongs to one thread, so no atomics and
// no barrier); two sums over the group give mean(g*dy) and mean(g*dy*xhat), and
// dx = rstd * (g*dy - mean(g*dy) - xhat * mean(g*dy*xhat)) goes out from registers. When the grid
// has walked every row, each CTA adds its groups' column sums in group order into one row of
// partials in the workspace, and sum_column_partials adds those rows in order: deterministic.
// Fixes, relative to the unfused kernels: x and dy cross from memory once (the unfused rung reads
// them twice), 16-byte loads, and the column sums need no second pass over the rows. Costs: the
// shared-memory column arrays (up to 128 KiB a CTA at 16384 features, which with the registers
// holds an SM to one or two CTAs); each row waits for its group sums before dx can be written,
// which only other resident groups hide; the partials (grid x features floats per output) are
// written and read once more; rows wider than 16384 features take the unfused rung. The add_ forms'
// residual gradient is read once more and added to dx on its way out.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

// columns[i] += add[i] for kCount consecutive columns: one 16-byte shared-memory access for 4
// (the columns then start on a 16-byte boundary), else one.
template <int kCount>
__device__ __forceinline__ void add_to_columns(float* columns, const float* add) {
  if constexpr (kCount == 4) {
    float4 c = *reinterpret_cast<float4*>(columns);
    c.x += add[0];
    c.y += add[1];
    c.z += add[2];
    c.w += add[3];
    *reinterpret_cast<float4*>(columns) = c;
  } else {
    static_assert(kCount == 1, "one column or four");
    columns[0] += add[0];
  }
}

// kVec elements of T loaded as one access and widened one at a time where used: a 16-bit
// vector stays 4 registers instead of 8.
template <int kVec, typename T>
struct PackedVector {
  T element[kVec];

  __device__ __forceinline__ explicit PackedVector(const T* p) {
    if constexpr (kVec == 1) {
      element[0] = *p;
    } else {
      *reinterpret_cast<Vector16<T>*>(element) = load_vector16(p);
    }
  }
  __device__ __forceinline__ float operator[](int i) const { return to_float(element[i]); }
};

// kResidual: the add_ form, dresidual added to dx (a separate kernel, so the plain backward keeps its
// registers; it holds dresidual's vectors too, so it asks for 768 threads an SM, not 1024, except
// in 1024-thread CTAs, where it spills a few values instead: dx must be rounded once, so the add
// cannot be a pass of its own).
template <typename T, int kGroup, int kItems, int kVec, bool kResidual>
__global__ void __launch_bounds__(kCtaThreads<kGroup>,
                                  kResidual&& kGroup < 1024 ? 768 / kCtaThreads<kGroup> : 1024 / kCtaThreads<kGroup>)
    norm_backward_fused_kernel(NormBackwardArgs<T> a, float* partials, std::int64_t partial_rows) {
  constexpr int kGroups = kCtaThreads<kGroup> / kGroup;
  // [kGroups][outputs][features]: each group's column sums of dy*xhat, then (LayerNorm) of dy.
  extern __shared__ float4 shared_columns[];
  __shared__ float scratch[kGroup / kWarpSize + 1];
  const bool layer = a.norm == Norm::layer;
  const int outputs = layer ? 2 : 1;
  const std::int64_t features = a.features;
  const int group = static_cast<int>(threadIdx.x) / kGroup;
  const int thread = static_cast<int>(threadIdx.x) % kGroup;
  const int vectors = static_cast<int>(features / kVec);
  const float inverse_count = 1.0f / static_cast<float>(features);
  float* const columns = reinterpret_cast<float*>(shared_columns);
  float* const dgamma_columns = columns + group * outputs * features;
  float* const dbeta_columns = dgamma_columns + features;  // LayerNorm only
  RowSlice<kItems, kVec, kGroup> x(thread, vectors);
  RowSlice<kItems, kVec, kGroup> dy(thread, vectors);
#pragma unroll
  for (int k = 0; k < x.kVectors; ++k) {
    if (!x.has(k)) continue;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      dgamma_columns[x.offset(k) + i] = 0.0f;
      if (layer) dbeta_columns[x.offset(k) + i] = 0.0f;
    }
  }
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kGroups + group; row < a.rows;
       row += static_cast<std::int64_t>(gridDim.x) * kGroups) {
    const float mean = layer ? a.mean[row] : 0.0f;
    const float rstd = a.rstd[row];
    x.load(a.x + row * features);
    dy.load(a.dy + row * features);
    float sum = 0.0f, sum_xhat = 0.0f;
#pragma unroll
    for (int k = 0; k < x.kVectors; ++k) {
      if (!x.has(k)) continue;
      const PackedVector<kVec, T> g(a.gamma + x.offset(k));
      // Four columns at a time: their sums of dy*xhat and dy are added to shared memory together.
      constexpr int kChunk = kVec % 4 == 0 ? 4 : 1;
#pragma unroll
      for (int j = 0; j < kVec; j += kChunk) {
        float dgamma[kChunk], dbeta[kChunk];
#pragma unroll
        for (int i = 0; i < kChunk; ++i) {
          float& xhat = x.value[k * kVec + j + i];
          float& g_dy = dy.value[k * kVec + j + i];
          xhat = (xhat - mean) * rstd;
          dgamma[i] = g_dy * xhat;  // g_dy still holds dy here
          dbeta[i] = g_dy;
          g_dy *= g[j + i];
          sum += g_dy;
          sum_xhat = fmaf(g_dy, xhat, sum_xhat);
        }
        add_to_columns<kChunk>(dgamma_columns + x.offset(k) + j, dgamma);
        if (layer) add_to_columns<kChunk>(dbeta_columns + x.offset(k) + j, dbeta);
      }
    }
    const float c1 = layer ? group_sum<kGroup>(sum, scratch) * inverse_count : 0.0f;
    const float c2 = group_sum<kGroup>(sum_xhat, scratch) * inverse_count;
    T* dx = a.dx + row * features;
    // The residual's gradient, loaded packed before the first store to dx (see add_residual).
    using Packed = std::conditional_t<kVec == 1, T, Vector16<T>>;
    Packed dresidual[kResidual ? kItems / kVec : 1];
    if constexpr (kResidual) {
#pragma unroll
      for (int k = 0; k < x.kVectors; ++k) {
        if (!x.has(k)) continue;
        if constexpr (kVec == 1) {
          dresidual[k] = a.dresidual[row * features + x.offset(k)];
        } else {
          dresidual[k] = load_vector16(a.dresidual + row * features + x.offset(k));
        }
      }
    }
#pragma unroll
    for (int k = 0; k < x.kVectors; ++k) {
      if (!x.has(k)) continue;
      float out[kVec];
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        out[i] = rstd * (dy.value[k * kVec + i] - c1 - x.value[k * kVec + i] * c2);
        if constexpr (kResidual) {
          if constexpr (kVec == 1) {
            out[i] += to_float(dresidual[k]);
          } else {
            out[i] += to_float(dresidual[k][i]);
          }
        }
      }
      store_floats<kVec>(dx + x.offset(k), out);
    }
  }
  __syncthreads();  // every group's column sums are final
  for (std::int64_t c = threadIdx.x; c < features; c += kCtaThreads<kGroup>) {
    for (int o = 0; o < outputs; ++o) {
      float total = 0.0f;
#pragma unroll
      for (int g = 0; g < kGroups; ++g) total += columns[(g * outputs + o) * features + c];
      partials[(o * partial_rows + blockIdx.x) * features + c] = total;
    }
  }
}

template <typename T, int kGroup, int kItems, int kVec>
void launch(const NormBackwardArgs<T>& a, float* partials, cudaStream_t stream) {
  constexpr int kCta = kCtaThreads<kGroup>;
  constexpr int kGroups = kCta / kGroup;
  auto* kernel = a.dresidual != nullptr ? norm_backward_fused_kernel<T, kGroup, kItems, kVec, true>
                                        : norm_backward_fused_kernel<T, kGroup, kItems, kVec, false>;
  const int outputs = a.norm == Norm::layer ? 2 : 1;
  const auto shared_bytes = static_cast<std::size_t>(kGroups * outputs * a.features) * sizeof(float);
  set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), shared_bytes);
  const std::int64_t partial_rows = backward_partial_count(a.rows, a.features);
  // As many CTAs as fit at once, no more than the partial rows the workspace holds or the rows.
  const std::int64_t wanted = std::min(partial_rows, ceil_div<std::int64_t>(a.rows, kGroups));
  const int blocks = resident_grid_size(kernel, kCta, wanted * kCta, shared_bytes);
  kernel<<<blocks, kCta, shared_bytes, stream>>>(a, partials, partial_rows);
  CUDALAB_CHECK_LAUNCH();
  sum_column_partials(partials, partial_rows, blocks, a.features, a.dgamma, a.norm == Norm::layer ? a.dbeta : nullptr,
                      stream);
}

// The smallest group whose registers hold the row (16 values of x and 16 of dy a thread at most;
// a warp with element loads stops at 8, past which its bounds checks do not fit 64 registers).
template <typename T, int kVec>
void launch_for_width(const NormBackwardArgs<T>& a, float* partials, cudaStream_t stream) {
  const std::int64_t f = a.features;
  if (f <= 256) return launch<T, 32, 8, kVec>(a, partials, stream);
  if constexpr (kVec > 1) {
    if (f <= 512) return launch<T, 32, 16, kVec>(a, partials, stream);
  }
  if (f <= 1024) return launch<T, 128, 8, kVec>(a, partials, stream);
  if (f <= 2048) return launch<T, 128, 16, kVec>(a, partials, stream);
  if (f <= 4096) return launch<T, 256, 16, kVec>(a, partials, stream);
  if (f <= 8192) return launch<T, 512, 16, kVec>(a, partials, stream);
  return launch<T, 1024, 16, kVec>(a, partials, stream);
}

}  // namespace

template <typename T>
void backward_fused(const NormBackwardArgs<T>& a, cudaStream_t stream) {
  const std::string why = backward_shape_limits(a.rows, a.features) + backward_fused_limits(a.features);
  CUDALAB_REQUIRE(why.empty(), "backward_fused: " + why);
  auto* partials =
      static_cast<float*>(workspace_of(a, backward_workspace_bytes(a.norm, a.rows, a.features), "backward_fused"));
  if (a.rows == 0 || a.features == 0) {
    sum_column_partials(partials, 0, 0, a.features, a.dgamma, a.norm == Norm::layer ? a.dbeta : nullptr, stream);
    return;
  }
  const bool aligned = a.features % kVector16<T> == 0 && backward_arrays_aligned16(a);
  if (aligned) {
    launch_for_width<T, kVector16<T>>(a, partials, stream);
  } else {
    launch_for_width<T, 1>(a, partials, stream);
  }
}

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_fused, NormBackwardArgs)

}  // namespace cudalab::norms_variants
