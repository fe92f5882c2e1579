// Device helpers every softmax kernel shares: the exponential, the (max, sum) pairs of online
// softmax, the row reductions behind one interface (core/row_reduce.cuh's, for a lane group or a
// block), a thread's share of a row held in registers, and the host-side choice of how many
// threads share a row.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/fast_math.cuh"
#include "core/row_reduce.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"

namespace cudalab::softmax_variants {

// Blocks of the kernels whose rows are shared by lane groups; the most threads a block may have.
inline constexpr int kGroupBlockThreads = 128;
inline constexpr int kMaxBlockThreads = 1024;

// exp(x - max) as 2^((x - max) * log2 e). The difference comes first: it is exact when x and max
// are within a factor of two (rows offset by 1e4), where the FMA form x * log2e - max * log2e would
// lose |max| * 2^-24 of the exponent, a relative error of 6e-4 at |max| = 1e4. What is left is
// three roundings of the argument (3 |x - max| 2^-24 relative) and exp2f's 2 ulp. exp(-inf - max)
// is 0; exp(-inf - -inf) is NaN, which callers whose padding can meet padding avoid.
__device__ __forceinline__ float exp_shifted(float x, float max) { return exp2f((x - max) * kLog2e); }

// The statistics online softmax carries: the largest value seen and the sum of exp(x - max) over
// the values seen. {-inf, 0} is the empty set. 8-byte aligned: the cluster rung sends one as a
// single 8-byte store.
struct alignas(8) RowStats {
  float max;
  float sum;
};

__device__ __forceinline__ RowStats merge(RowStats a, RowStats b) {
  const float max = fmaxf(a.max, b.max);
  if (max == -INFINITY) return {max, 0.0f};  // both empty: exp(-inf - -inf) would be NaN
  return {max, a.sum * exp_shifted(a.max, max) + b.sum * exp_shifted(b.max, max)};
}

struct MergeOf {
  __device__ RowStats operator()(RowStats a, RowStats b) const { return merge(a, b); }
};

// exp_shifted by ex2.approx alone: results below 2^-126 flush to 0. For the online sums only, whose
// max's own term is 1: what the flush drops is under vocab 2^-126 of the sum. A probability itself
// takes exp_shifted.
__device__ __forceinline__ float exp_shifted_for_sum(float x, float max) { return fast_exp2((x - max) * kLog2e); }

// Folds a step of a thread's values into its running statistics: the step's max first, the sum
// rescaled by exp(old max - new max) only when the max grew, then the step's exponentials. Padding
// reads -inf (its exponential is 0); a step of padding alone changes nothing. kFlushed: the
// exponentials by exp_shifted_for_sum (three instructions fewer each).
template <bool kFlushed = false, int kCount>
__device__ __forceinline__ void accumulate(RowStats& stats, const float (&v)[kCount]) {
  const auto exp = [](float x, float max) { return kFlushed ? exp_shifted_for_sum(x, max) : exp_shifted(x, max); };
  float step_max = -INFINITY;
#pragma unroll
  for (int i = 0; i < kCount; ++i) step_max = fmaxf(step_max, v[i]);
  if (step_max == -INFINITY) return;  // nothing but padding (or -inf logits, whose exp is 0)
  if (step_max > stats.max) {
    stats.sum *= exp(stats.max, step_max);  // 0 the first time: exp(-inf - m) = 0
    stats.max = step_max;
  }
#pragma unroll
  for (int i = 0; i < kCount; ++i) stats.sum += exp(v[i], stats.max);
}

// The pair moves between lanes as its two floats; group_reduce finds this by argument-dependent lookup.
__device__ __forceinline__ RowStats shuffle_xor(RowStats value, int offset) {
  return {cudalab::shuffle_xor(value.max, offset), cudalab::shuffle_xor(value.sum, offset)};
}

// The attention kernels take the lane-group reduction through this namespace.
using cudalab::group_reduce;
using cudalab::MaxOf;
using cudalab::SumOf;

// The reductions of a row shared by a group of kWidth lanes (kWidth <= 32) or by a whole block
// (BlockReduce), behind one interface for kernels templated on how many threads share a row. The
// block form lets every warp finish from the parked partials (no broadcast step) and takes the
// warp count from blockDim, which the layout sets at launch.
template <int kWidth>
struct GroupReduce {
  __device__ float max(float v) const { return group_reduce<kWidth>(v, MaxOf{}); }
  __device__ float sum(float v) const { return group_reduce<kWidth>(v, SumOf{}); }
};

// Every thread gets the block's result; `scratch` holds 32 values.
template <typename V, typename Op>
__device__ __forceinline__ V block_all_reduce(V value, V identity, Op op, V* scratch) {
  return block_reduce<BlockResult::every_warp, 0>(value, op, identity, scratch);
}

struct BlockReduce {
  float* scratch;  // 32 floats of shared memory
  __device__ float max(float v) const { return block_all_reduce(v, -INFINITY, MaxOf{}, scratch); }
  __device__ float sum(float v) const { return block_all_reduce(v, 0.0f, SumOf{}, scratch); }
};

// ---- a thread's share of a row in registers ------------------------------------------------------
// `threads` threads share a row; thread `thread` holds kElements values, as kElements / kPack packs:
// pack i starts at column (i * threads + thread) * kPack, so a warp's accesses are contiguous. Packs
// at or past `features` are not read and hold `fill`. kPack > 1 needs features % kPack == 0 and a
// 16-byte aligned row.
template <int kPack>
struct InterleavedShare {
  int features;
  int thread;
  int threads;
  __device__ __forceinline__ int offset(int i) const { return (i * threads + thread) * kPack; }
  __device__ __forceinline__ bool has(int i) const { return offset(i) < features; }
};

template <int kPack, int kElements, typename T>
__device__ __forceinline__ void load_fragment(const T* row, int features, int thread, int threads, float fill,
                                              float (&values)[kElements]) {
  static_assert(kElements % kPack == 0, "whole packs");
  load_share<kPack, kElements / kPack>(row, InterleavedShare<kPack>{features, thread, threads}, fill, values);
}

template <int kPack, int kElements, typename T>
__device__ __forceinline__ void store_fragment(T* row, int features, int thread, int threads,
                                               const float (&values)[kElements]) {
  store_share<kPack, kElements / kPack>(row, InterleavedShare<kPack>{features, thread, threads}, values);
}

// Runs body(row, thread, threads, valid, reduce) for a kernel templated on kThreadsPerRow: 0 for
// one block per row (block reductions), 4..32 for rows shared by groups of that many lanes in
// blocks of kGroupBlockThreads (shuffle reductions). `valid` is false for a group past the last
// row, which must still take part in its warp's shuffles and must not store.
template <int kThreadsPerRow, typename Body>
__device__ __forceinline__ void for_this_row(std::int64_t rows, Body&& body) {
  if constexpr (kThreadsPerRow == 0) {
    __shared__ float scratch[kWarpSize];
    body(static_cast<std::int64_t>(blockIdx.x), static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), true,
         BlockReduce{scratch});
  } else {
    const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kGroupBlockThreads / kThreadsPerRow) +
                             static_cast<int>(threadIdx.x) / kThreadsPerRow;
    body(row, static_cast<int>(threadIdx.x) % kThreadsPerRow, kThreadsPerRow, row < rows,
         GroupReduce<kThreadsPerRow>{});
  }
}

// ---- scalar passes over a row: element j by thread j % threads (the first rungs) -----------------

template <typename T>
__device__ __forceinline__ float scalar_row_max(const T* row, std::int64_t features, int thread, int threads) {
  float max = -INFINITY;
  for (std::int64_t j = thread; j < features; j += threads) max = fmaxf(max, to_float(row[j]));
  return max;
}

template <typename T>
__device__ __forceinline__ float scalar_row_sum_exp(const T* row, std::int64_t features, float max, int thread,
                                                    int threads) {
  float sum = 0.0f;
  for (std::int64_t j = thread; j < features; j += threads) sum += exp_shifted(to_float(row[j]), max);
  return sum;
}

// y_j = exp(x_j - max) * scale, with scale = 1 / sum.
template <typename T>
__device__ __forceinline__ void scalar_row_normalize(const T* x_row, T* y_row, std::int64_t features, float max,
                                                     float scale, int thread, int threads) {
  for (std::int64_t j = thread; j < features; j += threads)
    y_row[j] = from_float<T>(exp_shifted(to_float(x_row[j]), max) * scale);
}

// ---- host: how many threads share a row, and how many values each holds --------------------------

// threads_per_row 4..32: a group of lanes per row, several rows per block of kGroupBlockThreads;
// threads_per_row 0: one block of block_threads per row. `pack` is 16 / sizeof(T) for rows that
// are 16-byte aligned, else 1 (scalar loads, the same registers).
struct RowLayout {
  int threads_per_row = 0;
  int block_threads = 0;
  int elements = 0;
  int pack = 1;
};

inline int next_power_of_two(std::int64_t n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// The layout for rows of `features` values (1 <= features <= 1024 * max_elements) of an element
// type with `vector_elements` per 16 bytes. Narrow rows (one 16-byte vector per lane) share a warp
// with other rows; up to 32 * max_elements a warp per row; wider rows a block, with as few values
// per thread (8, 16, 32) as keeps the block at 512 threads or less (more threads per row, more
// registers left for more rows per SM), up to 1024 threads.
inline RowLayout choose_row_layout(std::int64_t features, int vector_elements, int max_elements, bool aligned) {
  RowLayout layout;
  layout.pack = aligned ? vector_elements : 1;
  if (features <= 32 * vector_elements) {
    const std::int64_t lanes = (features + vector_elements - 1) / vector_elements;
    layout.threads_per_row = next_power_of_two(lanes < 4 ? 4 : lanes);
    layout.block_threads = kGroupBlockThreads;
    layout.elements = vector_elements;
  } else if (features <= 32 * max_elements) {
    layout.threads_per_row = 32;
    layout.block_threads = kGroupBlockThreads;
    layout.elements = next_power_of_two((features + 31) / 32);
  } else {
    layout.threads_per_row = 0;
    layout.elements = max_elements;
    for (int e = 8; e < max_elements; e *= 2) {
      if (e >= vector_elements && (features + e - 1) / e <= 512) {
        layout.elements = e;
        break;
      }
    }
    layout.block_threads = static_cast<int>((features + layout.elements - 1) / layout.elements + 31) / 32 * 32;
  }
  return layout;
}

// Blocks a layout needs for `rows` rows.
inline std::int64_t row_layout_blocks(const RowLayout& layout, std::int64_t rows) {
  if (layout.threads_per_row == 0) return rows;
  const int rows_per_block = kGroupBlockThreads / layout.threads_per_row;
  return (rows + rows_per_block - 1) / rows_per_block;
}

// Calls f(std::integral_constant<int, P>) for the power of two P in [kFrom, kTo] equal to value;
// false when there is none.
template <int kFrom, int kTo, typename F>
bool dispatch_power_of_two(int value, F&& f) {
  if constexpr (kFrom > kTo) {
    return false;
  } else {
    if (value == kFrom) {
      f(std::integral_constant<int, kFrom>{});
      return true;
    }
    return dispatch_power_of_two<kFrom * 2, kTo>(value, f);
  }
}

// Calls launch(threads_per_row, elements, pack) with the layout's values as integral_constants, so
// a kernel templated on them is instantiated for exactly the layouts choose_row_layout returns
// (kVec = 16 / sizeof(T), kMaxElements its max_elements). False for any other layout.
template <int kVec, int kMaxElements, typename Launch>
bool dispatch_row_layout(const RowLayout& layout, Launch&& launch) {
  auto with_pack = [&](auto pack) {
    if (layout.threads_per_row == 0) {
      return dispatch_power_of_two<(kVec > 8 ? kVec : 8), kMaxElements>(
          layout.elements, [&](auto elements) { launch(std::integral_constant<int, 0>{}, elements, pack); });
    }
    if (layout.elements == kVec) {
      return dispatch_power_of_two<4, 32>(
          layout.threads_per_row, [&](auto threads) { launch(threads, std::integral_constant<int, kVec>{}, pack); });
    }
    return layout.threads_per_row == 32 &&
           dispatch_power_of_two<2 * kVec, kMaxElements>(
               layout.elements, [&](auto elements) { launch(std::integral_constant<int, 32>{}, elements, pack); });
  };
  return layout.pack == 1 ? with_pack(std::integral_constant<int, 1>{})
                          : with_pack(std::integral_constant<int, kVec>{});
}

}  // namespace cudalab::softmax_variants
