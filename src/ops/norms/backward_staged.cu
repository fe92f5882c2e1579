// Backward, rows staged in shared memory: the `fused` rung's arithmetic with the loads off the
// critical path. At model widths (a row of 1.5-16 KiB) `fused` holds one row a group in registers,
// and each row's loads wait for the previous row's sums: ncu shows DRAM at 58% and a warp to issue
// on 42% of cycles at 8192 x 1024 bf16 (H200). Here each thread copies its own 16-byte vectors of
// x, dy (and dresidual), and its row's statistics, into its own slots of a two-row ring in shared
// memory with cp.async, a row ahead of the one it works on; a thread reads back only what it
// copied, so the ring needs no barrier. A thread owns two vectors of columns (lane and lane +
// group): their sums of dy * xhat and dy stay in registers across all its group's rows, and xhat
// and gamma * dy stay in registers from the row's sums to its dx (forming them again from shared
// memory doubled the instructions an element: 4 vectors a thread, 3 stages, ran 0.7-0.9x `fused`).
// A row group is a warp (sums by shuffles) or several (the warps' sums through a double-buffered
// shared array behind a named barrier of the group's threads). At the end each CTA adds its
// groups' column sums in group order into one row of partials, which sum_column_partials adds in
// order: deterministic. Costs: the ring (up to 104 bytes a thread a row) and about 120 registers a
// thread bound an SM to 16 warps; vector-aligned rows of at most 1024 vectors (8192 features in
// 16-bit types, 4096 in f32).
#include <algorithm>
#include <cstdint>
#include <string>

#include <cuda_pipeline_primitives.h>

#include "core/launch.cuh"
#include "core/launch_attributes.hpp"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

constexpr int kVectors = 2;          // 16-byte vectors of a row a thread owns at most
constexpr int kStages = 2;           // rows in a group's ring: the one worked on and the next
constexpr int kMaxGroup = 512;       // threads of a row group at most: 1024 vectors
constexpr int kMinCtaThreads = 128;  // warp groups come several to a CTA
constexpr int kMaxGroups = kMinCtaThreads / kWarpSize;

// The threads of a row group for a row of `vectors` 16-byte vectors: kVectors each, whole warps.
int group_threads(std::int64_t vectors) {
  return static_cast<int>(ceil_div<std::int64_t>(ceil_div<std::int64_t>(vectors, kVectors), kWarpSize) * kWarpSize);
}

// One stage of the ring, as a thread sees it: its vectors of each array at slot k * group + lane
// (so a warp's 16-byte accesses are consecutive), then its copies of the row's mean and rstd.
struct StageLayout {
  int group, arrays;
  __host__ __device__ int vector_slots() const { return arrays * kVectors * group; }
  // Bytes of one stage of one group.
  __host__ __device__ int bytes() const { return vector_slots() * 16 + group * 2 * 4; }
};

// One CTA an SM at the least: at ptxas's own register target the f32 kernel spilled 4 bytes.
template <typename T, bool kLayer, bool kResidual>
__global__ void __launch_bounds__(kMaxGroup, 1)
    norm_backward_staged_kernel(NormBackwardArgs<T> a, int group_size, float* partials, std::int64_t partial_rows) {
  constexpr int V = kVector16<T>;
  constexpr int kArrays = kResidual ? 3 : 2;  // x, dy, dresidual
  extern __shared__ uint4 ring[];
  // [parity][group][warp][2]: a multi-warp group's warp sums, double-buffered by row parity.
  __shared__ float row_sums[2][kMaxGroups][kMaxGroup / kWarpSize][2];
  const int groups = static_cast<int>(blockDim.x) / group_size;
  const int group = static_cast<int>(threadIdx.x) / group_size;
  const int lane = static_cast<int>(threadIdx.x) % group_size;
  const int warp = lane / kWarpSize;
  const int row_vectors = static_cast<int>(a.features / V);
  const StageLayout layout{group_size, kArrays};
  char* const my_ring = reinterpret_cast<char*>(ring) + group * kStages * layout.bytes();
  const auto slot = [&](int stage, int array, int k) {
    return reinterpret_cast<uint4*>(my_ring + stage * layout.bytes()) + (array * kVectors + k) * group_size + lane;
  };
  const auto stats = [&](int stage) {
    return reinterpret_cast<float*>(my_ring + stage * layout.bytes() + layout.vector_slots() * 16) + 2 * lane;
  };
  bool present[kVectors];
#pragma unroll
  for (int k = 0; k < kVectors; ++k) present[k] = lane + k * group_size < row_vectors;

  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * groups;
  const std::int64_t first_row = static_cast<std::int64_t>(blockIdx.x) * groups + group;
  const std::int64_t my_rows = first_row < a.rows ? (a.rows - first_row + step - 1) / step : 0;
  // Copies row i of this group (if it has one) into its stage; always one commit, so that
  // wait_prior counts rows.
  const auto stage_row = [&](std::int64_t i) {
    if (i < my_rows) {
      const int stage = static_cast<int>(i % kStages);
      const std::int64_t row = first_row + i * step;
      const std::int64_t at = row * a.features;
#pragma unroll
      for (int k = 0; k < kVectors; ++k) {
        if (!present[k]) continue;
        const std::int64_t column = static_cast<std::int64_t>(lane + k * group_size) * V;
        __pipeline_memcpy_async(slot(stage, 0, k), a.x + at + column, 16);
        __pipeline_memcpy_async(slot(stage, 1, k), a.dy + at + column, 16);
        if constexpr (kResidual) __pipeline_memcpy_async(slot(stage, 2, k), a.dresidual + at + column, 16);
      }
      float* const s = stats(stage);
      if constexpr (kLayer) __pipeline_memcpy_async(s, a.mean + row, 4);
      __pipeline_memcpy_async(s + 1, a.rstd + row, 4);
    }
    __pipeline_commit();
  };

  float dgamma[kVectors][V] = {}, dbeta[kLayer ? kVectors : 1][V] = {};
  Vector16<T> gamma[kVectors];  // packed: widened where used
#pragma unroll
  for (int k = 0; k < kVectors; ++k)
    if (present[k]) gamma[k] = load_vector16(a.gamma + static_cast<std::int64_t>(lane + k * group_size) * V);

  for (int s = 0; s < kStages - 1; ++s) stage_row(s);
  const float inverse_count = 1.0f / static_cast<float>(a.features);
  for (std::int64_t i = 0; i < my_rows; ++i) {
    stage_row(i + kStages - 1);
    __pipeline_wait_prior(kStages - 1);  // row i's copies, this thread's own, are complete and visible to it
    const int stage = static_cast<int>(i % kStages);
    const float rstd = stats(stage)[1];
    // xhat and gamma * dy, held for dx after the row's sums.
    float xhat[kVectors][V], g_dy[kVectors][V];
    float sum = 0.0f, sum_xhat = 0.0f;
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      if (!present[k]) continue;
      const Vector16<T> x = *reinterpret_cast<const Vector16<T>*>(slot(stage, 0, k));
      const Vector16<T> dy = *reinterpret_cast<const Vector16<T>*>(slot(stage, 1, k));
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const float d = to_float(dy[e]);
        if constexpr (kLayer) {
          xhat[k][e] = (to_float(x[e]) - stats(stage)[0]) * rstd;
          dbeta[k][e] += d;
        } else {
          xhat[k][e] = to_float(x[e]) * rstd;
        }
        g_dy[k][e] = to_float(gamma[k][e]) * d;
        dgamma[k][e] = fmaf(d, xhat[k][e], dgamma[k][e]);
        if constexpr (kLayer) sum += g_dy[k][e];
        sum_xhat = fmaf(g_dy[k][e], xhat[k][e], sum_xhat);
      }
    }
    if constexpr (kLayer) sum = warp_sum(sum);
    sum_xhat = warp_sum(sum_xhat);
    if (group_size > kWarpSize) {
      const int parity = static_cast<int>(i & 1);
      if (lane % kWarpSize == 0) {
        row_sums[parity][group][warp][0] = sum;
        row_sums[parity][group][warp][1] = sum_xhat;
      }
      // The group's threads alone (ids 1 up; 0 is __syncthreads'): groups run apart.
      asm volatile("bar.sync %0, %1;" ::"r"(group + 1), "r"(group_size) : "memory");
      sum = 0.0f;
      sum_xhat = 0.0f;
      for (int w = 0; w < group_size / kWarpSize; ++w) {  // in warp order: the same bits in every thread
        sum += row_sums[parity][group][w][0];
        sum_xhat += row_sums[parity][group][w][1];
      }
    }
    const float c1 = kLayer ? sum * inverse_count : 0.0f;
    const float c2 = sum_xhat * inverse_count;
    T* const dx = a.dx + (first_row + i * step) * a.features;
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      if (!present[k]) continue;
      Vector16<T> dresidual;
      if constexpr (kResidual) dresidual = *reinterpret_cast<const Vector16<T>*>(slot(stage, 2, k));
      Vector16<T> out;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        float value = rstd * (fmaf(-xhat[k][e], c2, g_dy[k][e]) - c1);
        if constexpr (kResidual) value += to_float(dresidual[e]);
        out[e] = from_float<T>(value);
      }
      store_vector16(dx + static_cast<std::int64_t>(lane + k * group_size) * V, out);
    }
  }

  // The CTA's column sums, its groups' in group order, into one row of partials. The ring is free
  // once every thread's copies are done (the trailing groups are empty) and every thread is past it.
  __pipeline_wait_prior(0);
  __syncthreads();
  const int outputs = kLayer ? 2 : 1;
  float* const columns = reinterpret_cast<float*>(ring);  // [group][output][features]
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    if (!present[k]) continue;
    const int column = (lane + k * group_size) * V;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      columns[(group * outputs) * a.features + column + e] = dgamma[k][e];
      if constexpr (kLayer) columns[(group * outputs + 1) * a.features + column + e] = dbeta[k][e];
    }
  }
  __syncthreads();
  for (std::int64_t c = threadIdx.x; c < a.features; c += blockDim.x)
    for (int o = 0; o < outputs; ++o) {
      float total = 0.0f;
      for (int g = 0; g < groups; ++g) total += columns[(g * outputs + o) * a.features + c];
      partials[(o * partial_rows + blockIdx.x) * a.features + c] = total;
    }
}

template <typename T, bool kLayer, bool kResidual>
void launch(const NormBackwardArgs<T>& a, float* partials, cudaStream_t stream) {
  auto* kernel = norm_backward_staged_kernel<T, kLayer, kResidual>;
  const int group = group_threads(a.features / kVector16<T>);
  const int cta = std::max(group, kMinCtaThreads / group * group);
  const int groups = cta / group;
  const auto ring_bytes = static_cast<std::size_t>(groups * kStages) * StageLayout{group, kResidual ? 3 : 2}.bytes();
  set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), ring_bytes, /*max_shared_carveout=*/true);
  const std::int64_t partial_rows = backward_partial_count(a.rows, a.features);
  const std::int64_t wanted = std::min(partial_rows, ceil_div<std::int64_t>(a.rows, groups));
  const int blocks = resident_grid_size(kernel, cta, wanted * cta, ring_bytes);
  kernel<<<blocks, cta, ring_bytes, stream>>>(a, group, partials, partial_rows);
  CUDALAB_CHECK_LAUNCH();
  sum_column_partials(partials, partial_rows, blocks, a.features, a.dgamma, kLayer ? a.dbeta : nullptr, stream);
}

}  // namespace

std::string backward_staged_limits(std::int64_t features, std::size_t element_bytes, bool vector_aligned) {
  if (features * static_cast<std::int64_t>(element_bytes) % 16 != 0)
    return "takes rows of whole 16-byte vectors; this row has " + std::to_string(features) + " features";
  const std::int64_t vectors = features * static_cast<std::int64_t>(element_bytes) / 16;
  if (group_threads(vectors) > kMaxGroup)
    return "takes rows of at most " + std::to_string(kMaxGroup * kVectors) + " 16-byte vectors (" +
           std::to_string(kMaxGroup * kVectors * 16 / static_cast<std::int64_t>(element_bytes)) +
           " features); this row has " + std::to_string(vectors);
  if (!vector_aligned) return "takes 16-byte aligned tensors";
  return "";
}

template <typename T>
void backward_staged(const NormBackwardArgs<T>& a, cudaStream_t stream) {
  const std::string why = backward_shape_limits(a.rows, a.features) +
                          backward_staged_limits(a.features, sizeof(T), backward_arrays_aligned16(a));
  CUDALAB_REQUIRE(why.empty(), "backward_staged: " + why);
  auto* partials =
      static_cast<float*>(workspace_of(a, backward_workspace_bytes(a.norm, a.rows, a.features), "backward_staged"));
  const bool layer = a.norm == Norm::layer;
  if (a.rows == 0 || a.features == 0) {
    sum_column_partials(partials, 0, 0, a.features, a.dgamma, layer ? a.dbeta : nullptr, stream);
    return;
  }
  const bool residual = a.dresidual != nullptr;
  if (layer) {
    residual ? launch<T, true, true>(a, partials, stream) : launch<T, true, false>(a, partials, stream);
  } else {
    residual ? launch<T, false, true>(a, partials, stream) : launch<T, false, false>(a, partials, stream);
  }
}

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_staged, NormBackwardArgs)

}  // namespace cudalab::norms_variants
