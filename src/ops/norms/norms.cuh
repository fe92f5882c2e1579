// Device pieces every normalization rung shares: element conversions, the sum over a row group
// (a warp or a block), a row slice held in registers, the row statistics (shifted by the row's
// first element for LayerNorm, see variants.hpp) and the normalized output.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include "core/row_reduce.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "ops/norms/variants.hpp"

namespace cudalab::norms_variants {

// Threads of a CTA holding row groups of kGroup threads: a block is one group; warp groups come
// four to a CTA, so a CTA is not a single warp (an SM holds at most 32 CTAs).
template <int kGroup>
inline constexpr int kCtaThreads = kGroup == kWarpSize ? 4 * kWarpSize : kGroup;

// CTAs of a row-group kernel an SM should hold at once (the second __launch_bounds__ argument):
// 1536 threads when a thread holds at most 16 values in vectors (ptxas then fits the kernel in 40
// registers), 1024 otherwise (64 registers: 32 values, or 16 with element loads and their
// per-element bounds checks).
template <int kGroup, int kItems, int kVec>
inline constexpr int kMinCtasPerSm = ((kVec > 1 && kItems <= 16) ? 1536 : 1024) / kCtaThreads<kGroup> > 0
                                         ? ((kVec > 1 && kItems <= 16) ? 1536 : 1024) / kCtaThreads<kGroup>
                                         : 1;

// Whether every array a backward rung reads or writes in 16-byte vectors (x, dy, dx, gamma and, in
// the add_ forms, dresidual) starts on a 16-byte boundary; the rows' width is each rung's to check.
template <typename T>
__host__ __device__ inline bool backward_arrays_aligned16(const NormBackwardArgs<T>& a) {
  return is_aligned16(a.x) && is_aligned16(a.dy) && is_aligned16(a.dx) && is_aligned16(a.gamma) &&
         is_aligned16(a.dresidual);
}

// The sum of `value` over a group of kThreads threads (a warp, or the whole block), returned to
// every thread of the group. A block group's scratch holds kThreads / 32 + 1 values; its calls may
// follow one another with no barrier between them (BlockResult::broadcast).
template <int kThreads>
__device__ __forceinline__ float group_sum(float value, float* scratch) {
  if constexpr (kThreads == kWarpSize) {
    return warp_sum(value);
  } else {
    return block_reduce<BlockResult::broadcast, kThreads / kWarpSize>(value, SumOf{}, 0.0f, scratch);
  }
}

// The part of a row one thread holds, widened to fp32: vectors first + k * kStride (k <
// kItems / kVec) of kVec elements each, of which the first `present` exist in the row (the rest
// hold zeros). Indices are in vectors from the row's start (a row has fewer than 2^31 elements);
// a compile-time stride makes every vector's address a constant offset from the first one.
template <int kItems, int kVec, int kStride>
struct RowSlice {
  static_assert(kItems % kVec == 0, "whole vectors");
  static constexpr int kVectors = kItems / kVec;
  float value[kItems];
  int first;
  int present;

  // The slice of a thread whose first vector is `first`, in a row (or a cluster's share of one)
  // that ends before vector `end`.
  __device__ __forceinline__ RowSlice(int first_vector, int end)
      : first(first_vector), present(first_vector < end ? (end - first_vector + kStride - 1) / kStride : 0) {}

  __device__ __forceinline__ std::int64_t offset(int k) const {
    return (static_cast<std::int64_t>(first) + k * kStride) * kVec;
  }
  __device__ __forceinline__ bool has(int k) const { return k < present; }

  // Copies this thread's vectors of `row` into its own slots of `staged` (vector k at
  // k * kStride + threadIdx.x) with cp.async, committed as one group; 16-byte vectors only. `row`
  // may be any array laid out as a row: gamma and beta too.
  template <typename T>
  __device__ __forceinline__ void stage(const T* row, uint4* staged) const {
    static_assert(kVec * sizeof(T) == 16, "cp.async copies 16-byte vectors");
    const T* source = row + offset(0);
    // Opaque to the compiler, so it adds each vector's constant offset to this base instead of
    // keeping every loop-invariant address in a register pair (which spilled at 32 values a thread).
    asm("" : "+l"(source));
#pragma unroll
    for (int k = 0; k < kVectors; ++k)
      if (has(k)) __pipeline_memcpy_async(&staged[k * kStride + threadIdx.x], source + k * kStride * kVec, 16);
    __pipeline_commit();
  }
  // The slice from the slots stage() filled, once its copies are complete (cp.async's wait makes a
  // thread's own copies visible to it: no block barrier).
  template <typename T>
  __device__ __forceinline__ void load_staged(const uint4* staged) {
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      if (has(k)) {
        load_floats<kVec>(reinterpret_cast<const T*>(&staged[k * kStride + threadIdx.x]), &value[k * kVec]);
      } else {
#pragma unroll
        for (int i = 0; i < kVec; ++i) value[k * kVec + i] = 0.0f;
      }
    }
  }
  template <typename T>
  __device__ __forceinline__ void load(const T* row) {
    load_share<kVec, kVectors>(row, *this, 0.0f, value);
  }

  // The slice, holding x, becomes h = x + residual rounded to T (the value stored, so the norm
  // sees what the residual stream keeps), and h is stored to `sum`. Every residual vector is
  // loaded before the first store (no load may move above a store to memory the compiler cannot
  // prove apart), kept packed: a 16-bit vector in 4 registers, not 8.
  template <typename T>
  __device__ __forceinline__ void add_residual(const T* residual, T* sum) {
    using Packed = std::conditional_t<kVec == 1, T, Vector16<T>>;
    Packed packed[kVectors];
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      if (!has(k)) continue;
      if constexpr (kVec == 1) {
        packed[k] = residual[offset(k)];
      } else {
        packed[k] = load_vector16(residual + offset(k));
      }
    }
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      if (!has(k)) continue;
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        float r;
        if constexpr (kVec == 1) {
          r = to_float(packed[k]);
        } else {
          r = to_float(packed[k][i]);
        }
        value[k * kVec + i] = to_float(from_float<T>(value[k * kVec + i] + r));
      }
      store_floats<kVec>(sum + offset(k), &value[k * kVec]);
    }
  }
};

// A row's statistics as the kernels use them: LayerNorm's mean of the shifted values d = x - p
// (the saved mean is p + mean_d) and rstd; RMSNorm's rstd (mean_d 0).
struct RowStatistics {
  float mean_d;
  float rstd;
};

// The sums a thread adds over its slice: RMSNorm's squares (absent values are zeros and add
// nothing); LayerNorm's shifted values, in place (value = x - pivot) and summed; their squared
// deviations from a mean.
template <int kItems, int kVec, int kStride>
__device__ __forceinline__ float sum_of_squares(const RowSlice<kItems, kVec, kStride>& slice) {
  float squares = 0.0f;
#pragma unroll
  for (int i = 0; i < kItems; ++i) squares = fmaf(slice.value[i], slice.value[i], squares);
  return squares;
}

template <int kItems, int kVec, int kStride>
__device__ __forceinline__ float shift_and_sum(RowSlice<kItems, kVec, kStride>& slice, float pivot) {
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < slice.kVectors; ++k) {
    if (!slice.has(k)) continue;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      slice.value[k * kVec + i] -= pivot;
      sum += slice.value[k * kVec + i];
    }
  }
  return sum;
}

template <int kItems, int kVec, int kStride>
__device__ __forceinline__ float squared_deviations(const RowSlice<kItems, kVec, kStride>& slice, float mean) {
  float squares = 0.0f;
#pragma unroll
  for (int k = 0; k < slice.kVectors; ++k) {
    if (!slice.has(k)) continue;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const float deviation = slice.value[k * kVec + i] - mean;
      squares = fmaf(deviation, deviation, squares);
    }
  }
  return squares;
}

// The statistics of the row whose slices the threads hold. LayerNorm shifts the slice and takes two
// sums over registers: the shifted mean first, then the squared deviations from it, so no sum
// cancels (sum(x^2) - F mean^2 would lose the noise of a row at 1e4 + noise entirely).
// `reduce(v)` sums v over every thread holding part of the row. `inverse_count` is 1 / features
// (a multiplication costs one more rounding than a division, and none of the division's slow
// path).
template <int kItems, int kVec, int kStride, typename Reduce>
__device__ __forceinline__ RowStatistics row_statistics(Norm norm, RowSlice<kItems, kVec, kStride>& slice, float pivot,
                                                        float inverse_count, float eps, Reduce reduce) {
  if (norm == Norm::rms) return {0.0f, rsqrtf(reduce(sum_of_squares(slice)) * inverse_count + eps)};
  const float mean_d = reduce(shift_and_sum(slice, pivot)) * inverse_count;
  return {mean_d, rsqrtf(reduce(squared_deviations(slice, mean_d)) * inverse_count + eps)};
}

// Where write_normalized finds gamma and beta. `global`: loaded as each vector is written, L1 and
// L2 serving them (features long and shared by every row), so they hold no registers while the
// row is summed: enough where other CTAs on the SM hide the wait. `global_prefetched`: the same,
// each vector's lines asked into L1 two vectors ahead (prefetch.global.L1: no registers held).
// Without it a CTA alone on its SM waited a full L2 round trip per vector: a load cannot move
// above the previous vector's store to memory the compiler cannot prove apart (the cluster rung
// at 262144 fp32 features: 63% of stall cycles on L1TEX); loading a vector ahead into registers
// instead spilled 100-450 bytes at the rung's 64-register budget. `resident`: a persistent CTA
// holding the same share of every row keeps them in shared memory, in slots laid out as stage()
// lays out a row, gamma's then beta's.
enum class Parameters { global, global_prefetched, resident };

__device__ __forceinline__ void prefetch_l1(const void* p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }

// y for the slice's elements: (d - mean_d) * rstd * gamma + beta, or x * rstd * gamma. LayerNorm
// takes it as d * rstd + shift, shift = -mean_d * rstd once a row: two instructions an element, not
// three (mean_d is the mean of the shifted values, a few standard deviations at most unless the
// row's first element is an outlier, so the shift's rounding stays below the output's).
template <Parameters kParameters = Parameters::global, int kItems, int kVec, int kStride, typename T>
__device__ __forceinline__ void write_normalized(Norm norm, const RowSlice<kItems, kVec, kStride>& slice,
                                                 RowStatistics statistics, const T* gamma, const T* beta, T* y_row,
                                                 const uint4* resident = nullptr) {
  constexpr int kAhead = 2;
  const float shift = -statistics.mean_d * statistics.rstd;
  const auto prefetch = [&](int k) {
    if constexpr (kParameters == Parameters::global_prefetched) {
      if (k < slice.kVectors && slice.has(k)) {
        prefetch_l1(gamma + slice.offset(k));
        if (norm == Norm::layer) prefetch_l1(beta + slice.offset(k));
      }
    }
  };
#pragma unroll
  for (int k = 0; k < kAhead; ++k) prefetch(k);
#pragma unroll
  for (int k = 0; k < slice.kVectors; ++k) {
    if (!slice.has(k)) continue;
    prefetch(k + kAhead);
    const std::int64_t offset = slice.offset(k);
    const auto load_parameter = [&](const T* global, int array, float(&out)[kVec]) {
      if constexpr (kParameters == Parameters::resident) {
        load_floats<kVec>(reinterpret_cast<const T*>(&resident[(array * slice.kVectors + k) * kStride + threadIdx.x]),
                          out);
      } else {
        load_floats<kVec>(global + offset, out);
      }
    };
    float g[kVec], out[kVec];
    load_parameter(gamma, 0, g);
    if (norm == Norm::layer) {
      float b[kVec];
      load_parameter(beta, 1, b);
#pragma unroll
      for (int i = 0; i < kVec; ++i) out[i] = fmaf(fmaf(slice.value[k * kVec + i], statistics.rstd, shift), g[i], b[i]);
    } else {
#pragma unroll
      for (int i = 0; i < kVec; ++i) out[i] = slice.value[k * kVec + i] * statistics.rstd * g[i];
    }
    store_floats<kVec>(y_row + offset, out);
  }
}

// The multi-pass form the warp- and block-per-row rungs share: element loads, a group of
// kGroup threads striding over the row, one pass per sum and one for y (three reads of the row
// for LayerNorm, two for RMSNorm; the later ones mostly hit L1/L2). Each thread keeps four
// accumulators: four loads in flight, and rounding chains a quarter as long on wide rows.
template <int kGroup, typename T>
__device__ __forceinline__ void normalize_row_in_passes(const NormForwardArgs<T>& a, std::int64_t row, int thread,
                                                        float* scratch) {
  constexpr int kUnroll = 4;
  const std::int64_t features = a.features;
  const T* x = a.x + row * features;
  const bool layer = a.norm == Norm::layer;
  const float pivot = layer ? to_float(x[0]) : 0.0f;
  const auto count = static_cast<float>(features);
  // Sum over the row of f(x - pivot).
  const auto row_sum = [&](auto f) {
    float partial[kUnroll] = {};
    for (std::int64_t c = thread; c < features; c += kUnroll * kGroup) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const std::int64_t i = c + u * kGroup;
        if (i < features) partial[u] += f(to_float(x[i]) - pivot);
      }
    }
    return group_sum<kGroup>((partial[0] + partial[1]) + (partial[2] + partial[3]), scratch);
  };
  float mean_d = 0.0f, rstd = 0.0f;
  if (layer) {
    mean_d = row_sum([](float d) { return d; }) / count;
    const float var = row_sum([mean_d](float d) { return (d - mean_d) * (d - mean_d); }) / count;
    rstd = rsqrtf(var + a.eps);
  } else {
    rstd = rsqrtf(row_sum([](float v) { return v * v; }) / count + a.eps);
  }
  T* y = a.y + row * features;
  for (std::int64_t c = thread; c < features; c += kGroup) {
    const float g = to_float(a.gamma[c]);
    y[c] = from_float<T>(layer ? fmaf((to_float(x[c]) - pivot - mean_d) * rstd, g, to_float(a.beta[c]))
                               : to_float(x[c]) * rstd * g);
  }
  if (thread == 0) {
    if (layer && a.mean != nullptr) a.mean[row] = pivot + mean_d;
    if (a.rstd != nullptr) a.rstd[row] = rstd;
  }
}

}  // namespace cudalab::norms_variants
