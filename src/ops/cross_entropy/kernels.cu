// The cross-entropy rungs (variants.hpp). Each row is one block's: an online pass (Milakov and
// Gimelshein's running max and sum of exponentials, ops/softmax/softmax.cuh) reads the row once and
// gives lse; with label smoothing the same pass sums the logits; then, for the gradient, a second
// pass reads the row again and writes exp(x - lse) less the target's and the smoothing's shares.
//   online_scalar:     a block of 512 threads per row, element loads. The second read of a row comes
//                      from L2 only while the rows in flight fit in it: at vocab 128256 in bf16 a row
//                      is 250 KiB, and four blocks on each of 132 SMs keep 130 MiB of rows in flight,
//                      so most re-reads go back to DRAM.
//   online_vectorized: the same with two 16-byte vectors per thread and step. Fixes: a sixteenth of
//                      the load instructions. Rows of any vocab (50257: GPT-2's) take vectors over
//                      their 16-byte body, the few elements before and after it one per thread.
//   persistent:        one block of 1024 threads per SM, walking rows grid-stride, 16-byte
//                      accesses. Fixes: the rows in flight are one per SM (33 MiB at vocab 128256
//                      in bf16, inside a 50 MiB L2), so the gradient's re-read hits L2 and DRAM
//                      sees one read and one write of the logits. Costs: a row's two block
//                      reductions are not overlapped by another block's loads on the same SM.
//   resident:          online_vectorized's block per row, which also keeps the row it reads in shared
//                      memory (laid out 16-byte aligned as in memory, each thread's own columns) and
//                      takes the gradient's pass from there. Fixes: the logits cross from memory once
//                      whatever L2 holds. Costs: shared memory of a row (vocab x element bytes up to
//                      kResidentRowBytes: 32000 and 50257 in bf16, not 128256), fewer blocks an SM.
//   pipelined:         one block of 1024 threads per SM with two row buffers in shared memory: the
//                      next row's body goes in by cp.async while this row's two passes read the other
//                      buffer and write the gradient. Fixes: a block's loads no longer wait for its own
//                      reductions and stores, so reads and writes stay in flight together. Costs: two
//                      rows of shared memory (vocab 57,000 in bf16 on an H100, 28,000 in f32), the
//                      first row of each block not hidden.
// Ignored rows skip the online pass: loss 0, lse 0, a gradient of zeros. In the vectorized rungs
// (16-byte accesses, no softcap) a row whose weight makes the flush of tiny exponentials
// invisible (kShortFormWeight: every bf16 or fp16 row of a mean over more than 256 rows) writes its
// gradient in a short form: one exponential by ex2.approx and one fused multiply-add an element, the
// target's share added by the thread that holds it (21 instructions an element to 11 in resident's
// bf16 gradient loop); 16-bit gradients go out in 16-byte stores in every rung.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cooperative_groups.h>

#include "core/cluster.cuh"
#include "core/fast_math.cuh"
#include "core/launch.cuh"
#include "core/launch_attributes.hpp"
#include "core/mma_sync.cuh"
#include "core/vector.cuh"
#include "cudalab/cross_entropy.hpp"
#include "cudalab/error.hpp"
#include "ops/cross_entropy/variants.hpp"
#include "ops/softmax/softmax.cuh"

namespace cudalab::cross_entropy_variants {
namespace {

namespace cg = cooperative_groups;
using softmax_variants::block_all_reduce;
using softmax_variants::exp_shifted;
using softmax_variants::merge;
using softmax_variants::MergeOf;
using softmax_variants::RowStats;

// Column of value i of a thread's step in load_fragment's interleaved layout (softmax.cuh): pack
// i / kPack of the thread starts at column ((i / kPack) * threads + thread) * kPack.
template <int kPack>
__device__ __forceinline__ int column_of(int i, int thread, int threads) {
  return ((i / kPack) * threads + thread) * kPack + i % kPack;
}

// A row's 16-byte body (kPack > 1): from `head`, the elements before the row's first 16-byte
// boundary, for a whole number of vectors. The head and the tail past the body (each under one
// vector) go one element per thread (edge_column). With kPack 1 the body is the whole row.
struct RowBody {
  int head;
  std::int64_t length;
};

template <int kPack, typename T>
__device__ __forceinline__ RowBody row_body(const T* x, std::int64_t vocab) {
  if constexpr (kPack == 1) {
    return {0, vocab};
  } else {
    const int misaligned = static_cast<int>(reinterpret_cast<std::uintptr_t>(x) % 16 / sizeof(T));
    const int to_boundary = (kPack - misaligned) % kPack;
    const int head = to_boundary < vocab ? to_boundary : static_cast<int>(vocab);
    return {head, (vocab - head) / kPack * kPack};
  }
}

// The column outside the body that thread `thread` holds, or -1: threads below head hold the head,
// threads kPack.. the tail.
template <int kPack>
__device__ __forceinline__ std::int64_t edge_column(int thread, RowBody body, std::int64_t vocab) {
  if (thread < body.head) return thread;
  const std::int64_t column = body.head + body.length + (thread - kPack);
  return thread >= kPack && column < vocab ? column : -1;
}

// A logit as the loss sees it: softcap * tanh(x / softcap) in a capped kernel, else x; tanh by
// fast_tanh (two SFU instructions, inline): tanhf, called out of line, held the capped rungs to a
// quarter of the copy rate (online_vectorized at 4096 x 32000 bf16 on an H200: 539 us, against
// 275 with fast_tanh and 157 uncapped). A kernel is capped or not at compile time: with the cap's
// code in every kernel, the uncapped block-per-row rung took 62 registers instead of 40 (two blocks
// of 512 on an SM instead of three) and ran 21% slower at 4096 x 32000 bf16 on an H200.
__device__ __forceinline__ float softcapped(float x, float softcap) {
  return softcap * fast_tanh(x * (1.0f / softcap));
}
template <bool kCapped>
__device__ __forceinline__ float capped(float x, float softcap) {
  if constexpr (kCapped) {
    return softcapped(x, softcap);
  } else {
    return x;
  }
}

// Blocks of 512 threads: three to an SM (at most 42 registers); 1024: one.
template <int kThreads>
constexpr int kMinBlocks = kThreads == 512 ? 3 : 1;

// A row's gradient constants: scale (p (1 + 2 z lse) - e / vocab - (1 - e) [j == target]) dc/dx,
// p = exp(c - max) / sum over the capped logits c; zeros where `zero` (an ignored row); NaN stands
// in for an invalid target (a NaN scale).
struct RowGradient {
  float max, inverse_sum, scale;
  float p_factor;   // 1 + 2 z lse
  float spread;     // e / vocab
  float on_target;  // 1 - e
  float softcap;
  std::int64_t target;
  bool zero;
  // The short form: weight 2^((x - max) log2 e) + (minus_target or minus_spread), weight =
  // scale (1 + 2 z lse) / sum, the exponential by ex2.approx (results below 2^-126 flushed to 0,
  // which kShortFormWeight makes invisible): three fewer multiplies and exp2f's range scaling an
  // element.
  bool short_form;
  float weight, minus_spread, minus_target;
};

// The largest |weight| for which the short form's flush of exponentials below 2^-126 changes no
// result rounded to T: weight 2^-126 under half T's smallest subnormal (fp32 2^-150, bf16 2^-134,
// fp16 2^-25, which no finite weight reaches).
template <typename T>
inline constexpr float kShortFormWeight = std::is_same_v<T, float>           ? 0x1p-24f
                                          : std::is_same_v<T, __nv_bfloat16> ? 0x1p-8f
                                                                             : 3.4e38f;

// A row's gradient constants from the loss's options (either direction's arguments): p taken as
// exp(c - max) * inverse_sum, 1 + 2 z lse, e / vocab and 1 - e; the short form where the caller
// allows it and the flush cannot show (kShortFormWeight).
template <typename Args>
__device__ __forceinline__ RowGradient row_gradient(const Args& p, float max, float inverse_sum, float scale, float lse,
                                                    std::int64_t target, bool zero, bool short_form = false) {
  const float p_factor = 1.0f + 2.0f * p.z_loss * lse;
  const float spread = p.label_smoothing / static_cast<float>(p.vocab);
  const float on_target = 1.0f - p.label_smoothing;
  const float weight = scale * p_factor * inverse_sum;
  using T = std::remove_const_t<std::remove_pointer_t<decltype(p.logits)>>;
  return {max,
          inverse_sum,
          scale,
          p_factor,
          spread,
          on_target,
          p.softcap,
          target,
          zero,
          short_form && fabsf(weight) <= kShortFormWeight<T>,
          weight,
          -(scale * spread),
          -(scale * (spread + on_target))};
}

// One logit's gradient, as RowGradient says (its `zero` aside).
template <bool kCapped>
__device__ __forceinline__ float gradient_of(float x_j, bool is_target, const RowGradient& g) {
  const float c = capped<kCapped>(x_j, g.softcap);
  const float p = exp_shifted(c, g.max) * g.inverse_sum;
  const float dc = p * g.p_factor - g.spread - (is_target ? g.on_target : 0.0f);
  if constexpr (!kCapped) return g.scale * dc;
  // The slope before the scale: where |x| >> cap the slope is 0, and a large incoming gradient
  // times exp(c - lse) would overflow first (inf * 0 = NaN for a gradient of 0).
  const float ratio = c * (1.0f / g.softcap);
  return g.scale * (dc * (1.0f - ratio * ratio));
}

// A step's gradient values rounded to T and stored as load_fragment read them (dx is global memory).
// A 16-bit vector goes out as four words rounded in pairs through one 16-byte store: built element
// by element, or from the pair conversions (inline assembly in cuda_bf16.h), it reached the PTX as
// four 4-byte stores. core/vector.cuh's store_floats, which the other 16-bit kernels use, compiles
// the same way; it also stores to shared memory, where a generic-address store in its place
// changed the code around it (cross-entropy's online loop grew by a third), so it is unchanged.
template <int kPack, int kThreads, typename T, int kStep>
__device__ __forceinline__ void store_gradient(T* row, int count, int thread, const float (&v)[kStep]) {
  if constexpr (kPack == 8 && (std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>)) {
#pragma unroll
    for (int k = 0; k < kStep / kPack; ++k) {
      const int offset = (k * kThreads + thread) * kPack;
      if (offset >= count) continue;
      std::uint32_t words[4];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        if constexpr (std::is_same_v<T, __half>) {
          const __half2 pair = __floats2half2_rn(v[k * kPack + 2 * w], v[k * kPack + 2 * w + 1]);
          memcpy(&words[w], &pair, sizeof words[w]);
        } else {
          const __nv_bfloat162 pair = __floats2bfloat162_rn(v[k * kPack + 2 * w], v[k * kPack + 2 * w + 1]);
          memcpy(&words[w], &pair, sizeof words[w]);
        }
      }
      // st.global with no cache operator: __stwb's .wb came out as a strong (ordered) store.
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(row + offset), "r"(words[0]), "r"(words[1]),
                   "r"(words[2]), "r"(words[3])
                   : "memory");
    }
  } else {
    softmax_variants::store_fragment<kPack>(row, count, thread, kThreads, v);
  }
}

// A step's logits `v` (load_fragment's layout) become their gradients, as RowGradient says;
// `step_target` is the target's column counted from the step's first (anywhere outside it: not in
// it). kShortForm: the kernel has the short form's loop as well (rows whose g.short_form holds take
// it).
template <int kPack, int kThreads, bool kCapped, bool kShortForm, int kStep>
__device__ __forceinline__ void gradient_step(float (&v)[kStep], std::int64_t step_target, const RowGradient& g,
                                              int thread) {
  constexpr std::int64_t kBlockStep = static_cast<std::int64_t>(kThreads) * kStep;
  // The target's column in this step, in 32 bits (-1: not in it).
  const int target = step_target >= 0 && step_target < kBlockStep ? static_cast<int>(step_target) : -1;
  if (kShortForm && g.short_form) {
#pragma unroll
    for (int i = 0; i < kStep; ++i) v[i] = fmaf(g.weight, fast_exp2((v[i] - g.max) * kLog2e), g.minus_spread);
    // The target's share, by the one thread holding its column (column_of inverted): one
    // comparison a step for the others instead of one an element.
    if (target >= 0 && (target / kPack) % kThreads == thread) {
      const int held = target / (kPack * kThreads) * kPack + target % kPack;  // its value's index here
#pragma unroll
      for (int i = 0; i < kStep; ++i)
        if (i == held) v[i] += g.minus_target - g.minus_spread;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kStep; ++i)
      v[i] = gradient_of<kCapped>(v[i], column_of<kPack>(i, thread, kThreads) == target, g);
  }
}

// Row `row`'s gradient, step by step, as RowGradient says. kShortForm: the kernel has the short
// form's loop as well (rows whose g.short_form holds take it).
template <typename T, int kPack, int kThreads, bool kCapped, bool kShortForm = false>
__device__ __forceinline__ void write_gradient(const T* x, T* dx, std::int64_t vocab, const RowGradient& g) {
  constexpr int kStep = 2 * kVector16<T>;
  constexpr std::int64_t kBlockStep = static_cast<std::int64_t>(kThreads) * kStep;
  const int thread = static_cast<int>(threadIdx.x);
  const RowBody body = row_body<kPack>(x, vocab);
  const std::int64_t edge = edge_column<kPack>(thread, body, vocab);
  if (edge >= 0) dx[edge] = from_float<T>(g.zero ? 0.0f : gradient_of<kCapped>(to_float(x[edge]), edge == g.target, g));
  for (std::int64_t base = 0; base < body.length; base += kBlockStep) {
    const int count = static_cast<int>(body.length - base < kBlockStep ? body.length - base : kBlockStep);
    float v[kStep];
    if (g.zero) {  // an ignored row: no read
#pragma unroll
      for (int i = 0; i < kStep; ++i) v[i] = 0.0f;
    } else {
      softmax_variants::load_fragment<kPack>(x + body.head + base, count, thread, kThreads, -INFINITY, v);
      gradient_step<kPack, kThreads, kCapped, kShortForm>(v, g.target - body.head - base, g, thread);
    }
    store_gradient<kPack, kThreads>(dx + body.head + base, count, thread, v);
  }
}

// A step of 16-byte vectors from `from` (memory) into the same places of `to` (a shared copy) as
// loaded, and widened into `v` in load_fragment's layout (padding -inf). Stored as loaded: rounded
// back from fp32 (the same bits), ptxas stored one of a thread's two vectors as four 4-byte stores
// and converted every value twice.
template <int kPack, int kThreads, typename T, int kStep>
__device__ __forceinline__ void load_and_keep(const T* from, T* to, int count, int thread, float (&v)[kStep]) {
#pragma unroll
  for (int k = 0; k < kStep / kPack; ++k) {
    const int offset = (k * kThreads + thread) * kPack;
    if (offset < count) {
      const Vector16<T> raw = load_vector16(from + offset);
      store_vector16(to + offset, raw);
#pragma unroll
      for (int i = 0; i < kPack; ++i) v[k * kPack + i] = to_float(raw[i]);
    } else {
#pragma unroll
      for (int i = 0; i < kPack; ++i) v[k * kPack + i] = -INFINITY;
    }
  }
}

// Folds a step of logits (load_fragment's layout, `count` of them present) into a thread's running
// statistics: capped first in a capped kernel, the present columns only (the padding stays -inf,
// its exponential 0); with smoothing their sum too, by column, not by value (a logit of -inf is a
// real one, and makes the smoothed loss inf).
template <int kPack, int kThreads, bool kCapped, int kStep>
__device__ __forceinline__ void fold_step(float (&v)[kStep], int count, int thread, float softcap, bool smoothing,
                                          RowStats& stats, float& sum_x) {
  if constexpr (kCapped) {
#pragma unroll
    for (int i = 0; i < kStep; ++i)
      if (column_of<kPack>(i, thread, kThreads) < count) v[i] = capped<kCapped>(v[i], softcap);
  }
  if (smoothing) {
#pragma unroll
    for (int i = 0; i < kStep; ++i)
      if (column_of<kPack>(i, thread, kThreads) < count) sum_x += v[i];
  }
  softmax_variants::accumulate<true>(stats, v);
}

// Row `row`'s loss and lse from its lse, its target's capped logit (NaN for an invalid target) and,
// with label smoothing, the sum of its capped logits.
template <typename T>
__device__ __forceinline__ void write_row_loss(const CrossEntropyArgs<T>& p, std::int64_t row, float lse,
                                               float c_target, bool smoothing, float sum_x) {
  const float smoothed = smoothing ? p.label_smoothing * sum_x / static_cast<float>(p.vocab) : 0.0f;
  p.loss[row] = lse - (1.0f - p.label_smoothing) * c_target - smoothed + p.z_loss * lse * lse;
  p.lse[row] = lse;
}

// One row's loss, lse and (with dlogits) gradient, by the whole block: an online pass over the row
// at `x` (memory, or a shared copy laid out as in memory) for its max, sum of exponentials and,
// with label smoothing, sum of logits; then the gradient's pass. kKeepCopy: the online pass also
// stores the row into `copy` (at its offset from a 16-byte boundary as in memory, so row_body and
// each thread's columns are the same there) and the gradient's pass reads it from there. `target`
// is the row's, not ignore_index (ignored_row below).
template <typename T, int kPack, int kThreads, bool kCapped, bool kKeepCopy>
__device__ __forceinline__ void row_loss_and_gradient(const CrossEntropyArgs<T>& p, std::int64_t row,
                                                      std::int64_t target, const T* x, T* copy, int thread,
                                                      bool smoothing, RowStats* stats_scratch, float* sum_scratch) {
  constexpr int kStep = 2 * kVector16<T>;  // values a thread loads a step, vectors or not
  constexpr std::int64_t kBlockStep = static_cast<std::int64_t>(kThreads) * kStep;
  // The short form in the vectorized uncapped kernels (write_gradient). With it the fp16
  // block-per-row kernel, at 40 registers, keeps one value in local memory (an L1 load every 16
  // logits); the others spill nothing.
  constexpr bool kShortForm = !kCapped && kPack > 1;
  RowStats stats{-INFINITY, 0.0f};
  float sum_x = 0.0f;
  const RowBody body = row_body<kPack>(x, p.vocab);
  const std::int64_t edge = edge_column<kPack>(thread, body, p.vocab);
  if (edge >= 0) {
    if constexpr (kKeepCopy) copy[edge] = x[edge];
    const float v[1] = {capped<kCapped>(to_float(x[edge]), p.softcap)};
    softmax_variants::accumulate<true>(stats, v);
    sum_x += v[0];
  }
  for (std::int64_t base = 0; base < body.length; base += kBlockStep) {
    const int count = static_cast<int>(body.length - base < kBlockStep ? body.length - base : kBlockStep);
    float v[kStep];
    if constexpr (kKeepCopy && kPack > 1) {
      load_and_keep<kPack, kThreads>(x + body.head + base, copy + body.head + base, count, thread, v);
    } else {
      softmax_variants::load_fragment<kPack>(x + body.head + base, count, thread, kThreads, -INFINITY, v);
      // The values as loaded (T widened exactly: stored back, the same bits), before any cap.
      if constexpr (kKeepCopy)
        softmax_variants::store_fragment<kPack>(copy + body.head + base, count, thread, kThreads, v);
    }
    fold_step<kPack, kThreads, kCapped>(v, count, thread, p.softcap, smoothing, stats, sum_x);
  }
  // The target's logit is read before the block's reductions: past them other threads write the
  // gradient, which may lie over the logits (in place).
  const bool valid = 0 <= target && target < p.vocab;
  const float c_target = thread == 0 && valid ? capped<kCapped>(to_float(x[target]), p.softcap) : NAN;
  stats = block_all_reduce(stats, RowStats{-INFINITY, 0.0f}, MergeOf{}, stats_scratch);
  if (smoothing) sum_x = block_all_reduce(sum_x, 0.0f, SumOf{}, sum_scratch);
  const float lse = stats.max + logf(stats.sum);
  if (thread == 0) {
    write_row_loss(p, row, lse, c_target, smoothing, sum_x);
  }
  if (p.dlogits != nullptr) {
    const float scale = !valid ? NAN : p.grad_scale != nullptr ? *p.grad_scale : 1.0f;
    const RowGradient g = row_gradient(p, stats.max, 1.0f / stats.sum, scale, lse, target, false, kShortForm);
    write_gradient<T, kPack, kThreads, kCapped, kShortForm>(kKeepCopy ? copy : x, p.dlogits + row * p.vocab, p.vocab,
                                                            g);
  }
}

// An ignored row, not read: loss 0, lse 0, a gradient of zeros. `x` places the gradient's body.
template <typename T, int kPack, int kThreads, bool kCapped>
__device__ __forceinline__ void ignored_row(const CrossEntropyArgs<T>& p, std::int64_t row, std::int64_t target,
                                            const T* x, int thread) {
  if (thread == 0) p.loss[row] = p.lse[row] = 0.0f;
  if (p.dlogits != nullptr) {
    const RowGradient zero{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, target, true};
    write_gradient<T, kPack, kThreads, kCapped>(x, p.dlogits + row * p.vocab, p.vocab, zero);
  }
}

// A block per row (one per SM when persistent). kResident: the row is also kept in dynamic shared
// memory (resident, above) for the gradient's pass.
template <typename T, int kPack, int kThreads, bool kCapped, bool kResident = false>
__global__ void __launch_bounds__(kThreads, kMinBlocks<kThreads>) cross_entropy_kernel(const CrossEntropyArgs<T> p) {
  __shared__ RowStats stats_scratch[kWarpSize];
  __shared__ float sum_scratch[kWarpSize];
  extern __shared__ float4 resident_row[];
  const int thread = static_cast<int>(threadIdx.x);
  const bool smoothing = p.label_smoothing != 0.0f;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x = p.logits + row * p.vocab;
    T* copy = nullptr;
    if constexpr (kResident) {
      __syncthreads();  // the last row's gradient pass is done with the copy
      copy = reinterpret_cast<T*>(resident_row) + reinterpret_cast<std::uintptr_t>(x) % 16 / sizeof(T);
    }
    const std::int64_t target = p.target[row];
    if (target == p.ignore_index) {
      ignored_row<T, kPack, kThreads, kCapped>(p, row, target, x, thread);
      continue;
    }
    row_loss_and_gradient<T, kPack, kThreads, kCapped, kResident>(p, row, target, x, copy, thread, smoothing,
                                                                  stats_scratch, sum_scratch);
  }
}

// The pipelined rung: each block walks rows blockIdx.x, + gridDim.x, ..., holding two rows in
// `rows_shared` (each `buffer_elements` long, a row at its offset from a 16-byte boundary as in
// memory). While it works on one row the next row's body arrives in the other buffer by cp.async;
// the edges (under a vector each) are copied by plain loads. An ignored row is not fetched.
template <typename T, int kThreads, bool kCapped>
__global__ void __launch_bounds__(kThreads, 1)
    cross_entropy_pipelined_kernel(const CrossEntropyArgs<T> p, std::int64_t buffer_elements) {
#if CUDALAB_TENSOR_CORE_SM80
  constexpr int kPack = kVector16<T>;
  __shared__ RowStats stats_scratch[kWarpSize];
  __shared__ float sum_scratch[kWarpSize];
  extern __shared__ float4 rows_shared[];
  const int thread = static_cast<int>(threadIdx.x);
  const auto copy_of = [&](std::int64_t row, int buffer) {
    const T* x = p.logits + row * p.vocab;
    return reinterpret_cast<T*>(rows_shared) + buffer * buffer_elements +
           reinterpret_cast<std::uintptr_t>(x) % 16 / sizeof(T);
  };
  // One commit group a row, empty for an ignored one, so that waiting for all but the newest group
  // always means this row's.
  // A thread's edge element of a fetched row (fewer than a vector at each end of the body): loaded
  // by the fetch, stored into the copy after this row's work, when the load has long arrived, so
  // no warp waits a memory round trip in the fetch.
  struct Edge {
    T* at = nullptr;
    T value;
  };
  const auto fetch = [&](std::int64_t row, int buffer) {
    Edge pending;
    if (p.target[row] != p.ignore_index) {
      const T* x = p.logits + row * p.vocab;
      T* copy = copy_of(row, buffer);
      const RowBody body = row_body<kPack>(x, p.vocab);
      const std::int64_t edge = edge_column<kPack>(thread, body, p.vocab);
      if (edge >= 0) pending = {copy + edge, x[edge]};
      for (std::int64_t at = body.head + static_cast<std::int64_t>(thread) * kPack; at < body.head + body.length;
           at += static_cast<std::int64_t>(kThreads) * kPack)
        cp_async16(shared_address(copy + at), x + at, 16);
    }
    cp_async_commit();
    return pending;
  };
  std::int64_t row = blockIdx.x;
  if (row < p.rows) {
    const Edge first = fetch(row, 0);
    if (first.at != nullptr) *first.at = first.value;
  }
  for (int buffer = 0; row < p.rows; row += gridDim.x, buffer ^= 1) {
    const std::int64_t next = row + gridDim.x;
    Edge next_edge;
    if (next < p.rows) {
      next_edge = fetch(next, buffer ^ 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // this row's copy is whole, every thread's part of it
    const std::int64_t target = p.target[row];
    const T* copy = copy_of(row, buffer);
    if (target == p.ignore_index) {
      ignored_row<T, kPack, kThreads, kCapped>(p, row, target, copy, thread);
    } else {
      row_loss_and_gradient<T, kPack, kThreads, kCapped, false>(p, row, target, copy, nullptr, thread,
                                                                p.label_smoothing != 0.0f, stats_scratch, sum_scratch);
    }
    if (next_edge.at != nullptr) *next_edge.at = next_edge.value;  // into the other buffer, read next
    __syncthreads();  // every thread is done with this buffer before the fetch two rows on refills it
  }
#else
  __trap();
#endif
}

// The cluster rung: each row split over a cluster of `size` CTAs (2-8), CTA r holding vectors
// [r * share_vectors, (r + 1) * share_vectors) of the row's 16-byte body in shared memory, as
// `resident` holds a whole row; rank 0 also takes the elements before the body, the last rank those
// after it. A share's online pass gives its (max, sum) and, with smoothing, its sum of logits; two
// ClusterInbox exchanges (core/cluster.cuh) give every CTA the row's and the target's capped logit
// (its holder sends it, the others 0); each CTA writes its share's gradient from shared memory, and
// rank 0 the loss and lse. In place is safe: every CTA reads its share before it sends its part
// of the first exchange, and no CTA writes before it has every part. CTAs of 256 threads: a row's
// fixed work (two block reductions, the exchanges, the merge of the shares) is paid by every warp,
// and with 512 threads it cost about a third of the rung's instructions (estimated from ncu's issue
// rates against online_vectorized's at 2048 x 128256 in bf16 on an H200); with 256 threads and the
// bulk copy the rung ran 1.06-1.21x faster.
template <typename T, bool kCapped>
__global__ void __launch_bounds__(kClusterThreads)
    cross_entropy_cluster_kernel(const CrossEntropyArgs<T> p, std::int64_t share_vectors) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kPack = kVector16<T>;
  constexpr int kThreads = kClusterThreads;
  constexpr int kStep = 2 * kPack;
  constexpr int kBlockStep = kThreads * kStep;
  constexpr bool kShortForm = !kCapped;
  __shared__ RowStats stats_scratch[kWarpSize];
  __shared__ float sum_scratch[kWarpSize];
  __shared__ float target_logit;  // the capped target logit where this CTA holds it, else 0
  // Two exchanges a row; the barriers of each row's block reductions stand between one row's reads
  // and the next row's sends, as the inbox requires.
  __shared__ ClusterInbox<RowStats, kMaxClusterCtas> stats_inbox;
  __shared__ ClusterInbox<float2, kMaxClusterCtas> sums_inbox;
  __shared__ std::uint64_t share_loaded;  // the share's bulk copy: thread 0's arrival and its bytes
  extern __shared__ float4 share_shared[];
  T* const copy = reinterpret_cast<T*>(share_shared);
  const cg::cluster_group cluster = cg::this_cluster();
  const int size = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  const int thread = static_cast<int>(threadIdx.x);
  const bool smoothing = p.label_smoothing != 0.0f;
  if (thread == 0) {
    cuda::ptx::mbarrier_init(&share_loaded, 1);
    stats_inbox.init();
    sums_inbox.init();
  }
  cluster.sync();  // every CTA's barriers exist before anyone sends to them
  int exchanges = 0, loads = 0;
  const std::int64_t clusters = gridDim.x / size;
  for (std::int64_t row = blockIdx.x / size; row < p.rows; row += clusters) {
    __syncthreads();  // the last row's gradient pass is done with the copy
    const T* x = p.logits + row * p.vocab;
    T* const dx = p.dlogits == nullptr ? nullptr : p.dlogits + row * p.vocab;
    const RowBody body = row_body<kPack>(x, p.vocab);
    const std::int64_t vectors = body.length / kPack;
    const std::int64_t first = min(vectors, rank * share_vectors);
    const std::int64_t begin = body.head + first * kPack;  // the share's first column
    const int count = static_cast<int>((min(vectors, first + share_vectors) - first) * kPack);
    std::int64_t edge = edge_column<kPack>(thread, body, p.vocab);
    if (edge >= 0 && (edge < body.head ? rank != 0 : rank != size - 1)) edge = -1;
    const std::int64_t target = p.target[row];
    if (target == p.ignore_index) {  // an ignored row, not read: loss 0, lse 0, a gradient of zeros
      if (rank == 0 && thread == 0) p.loss[row] = p.lse[row] = 0.0f;
      if (dx != nullptr) {
        if (edge >= 0) dx[edge] = from_float<T>(0.0f);
        const float zeros[kStep] = {};
        for (int base = 0; base < count; base += kBlockStep)
          store_gradient<kPack, kThreads>(dx + begin + base, min(count - base, kBlockStep), thread, zeros);
      }
      continue;
    }
    // The share arrives in shared memory by one bulk copy, all of it in flight at once; the
    // online pass reads it there.
    if (thread == 0) {
      const auto bytes = static_cast<std::uint32_t>(count * sizeof(T));
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &share_loaded, bytes);
      if (bytes > 0)
        cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, copy, x + begin, bytes,
                                 &share_loaded);
    }
    RowStats stats{-INFINITY, 0.0f};
    float sum_x = 0.0f, edge_logit = 0.0f;
    if (edge >= 0) {
      edge_logit = to_float(x[edge]);
      const float v[1] = {capped<kCapped>(edge_logit, p.softcap)};
      softmax_variants::accumulate<true>(stats, v);
      sum_x += v[0];
    }
    while (!cuda::ptx::mbarrier_try_wait_parity(&share_loaded, static_cast<std::uint32_t>(loads & 1))) {
    }
    ++loads;
    for (int base = 0; base < count; base += kBlockStep) {
      const int step = min(count - base, kBlockStep);
      float v[kStep];
      softmax_variants::load_fragment<kPack>(copy + base, step, thread, kThreads, -INFINITY, v);
      fold_step<kPack, kThreads, kCapped>(v, step, thread, p.softcap, smoothing, stats, sum_x);
    }
    stats = block_all_reduce(stats, RowStats{-INFINITY, 0.0f}, MergeOf{}, stats_scratch);
    sum_x = smoothing ? block_all_reduce(sum_x, 0.0f, SumOf{}, sum_scratch) : 0.0f;
    // The target's capped logit where this CTA holds it (its share's copy, whole past the reductions'
    // barriers, or one of its edge elements, which only it writes, later), else 0. Set by thread 0
    // alone, past the barriers that follow every thread's read of the last row's.
    const bool valid = 0 <= target && target < p.vocab;
    if (thread == 0) {
      const bool edge_held =
          valid && (target < body.head ? rank == 0 : target >= body.head + body.length && rank == size - 1);
      target_logit = begin <= target && target < begin + count
                         ? capped<kCapped>(to_float(copy[target - begin]), p.softcap)
                     : edge_held ? capped<kCapped>(to_float(x[target]), p.softcap)
                                 : 0.0f;
    }
    __syncthreads();  // target_logit is set
    const RowStats* const shares = stats_inbox.exchange(cluster, exchanges, stats);
    const float2* const sums = sums_inbox.exchange(cluster, exchanges, make_float2(sum_x, target_logit));
    ++exchanges;
    RowStats all{-INFINITY, 0.0f};
    float all_x = 0.0f, c_target = 0.0f;
    for (int r = 0; r < size; ++r) {  // in rank order: every CTA gets the same bits
      all = merge(all, shares[r]);
      all_x += sums[r].x;
      c_target += sums[r].y;
    }
    if (!valid) c_target = NAN;
    const float lse = all.max + logf(all.sum);
    if (rank == 0 && thread == 0) {
      write_row_loss(p, row, lse, c_target, smoothing, all_x);
    }
    if (dx == nullptr) continue;
    const float scale = !valid ? NAN : p.grad_scale != nullptr ? *p.grad_scale : 1.0f;
    const RowGradient g = row_gradient(p, all.max, 1.0f / all.sum, scale, lse, target, false, kShortForm);
    if (edge >= 0) dx[edge] = from_float<T>(gradient_of<kCapped>(edge_logit, edge == target, g));
    for (int base = 0; base < count; base += kBlockStep) {
      const int step = min(count - base, kBlockStep);
      float v[kStep];
      softmax_variants::load_fragment<kPack>(copy + base, step, thread, kThreads, -INFINITY, v);
      gradient_step<kPack, kThreads, kCapped, kShortForm>(v, target - begin - base, g, thread);
      store_gradient<kPack, kThreads>(dx + begin + base, step, thread, v);
    }
  }
  cluster.sync();  // no CTA leaves while a peer's last send may still target it
#else
  __trap();
#endif
}

// Row `row`'s gradient constants in the backward, from its saved lse and incoming gradient.
template <typename T>
__device__ __forceinline__ RowGradient backward_row_gradient(const CrossEntropyBackwardArgs<T>& p, std::int64_t row) {
  const std::int64_t target = p.target[row];
  const bool ignored = target == p.ignore_index;
  const bool valid = 0 <= target && target < p.vocab;
  const float scale = !valid ? NAN : p.dloss[row * p.dloss_stride];
  const float lse = ignored ? 0.0f : p.lse[row];
  // exp(c - lse) is exp(c - max) / sum with max = lse and sum = 1. The short form where the caller
  // has it (row_gradient: where its flush cannot show).
  return row_gradient(p, lse, 1.0f, scale, lse, target, ignored, true);
}

template <typename T, int kPack, int kThreads, bool kCapped>
__global__ void __launch_bounds__(kThreads) cross_entropy_backward_kernel(const CrossEntropyBackwardArgs<T> p) {
  constexpr bool kShortForm = !kCapped && kPack > 1;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const RowGradient g = backward_row_gradient(p, row);
    write_gradient<T, kPack, kThreads, kCapped, kShortForm>(p.logits + row * p.vocab, p.dlogits + row * p.vocab,
                                                            p.vocab, g);
  }
}

// The flat backward: the logits and their gradient taken as one array of rows x vocab elements, in
// 16-byte vectors, kFlatVectors a thread loaded together, over a grid that fills the GPU, whatever
// the vocab: a row may start anywhere in a vector, so one division (32-bit where the array allows)
// finds a vector's first row and the row advances where its column reaches vocab. The elements before the first 16-byte
// boundary and after the last whole vector go one a thread.
inline constexpr int kFlatVectors = 2;

template <typename T, bool kCapped>
__global__ void __launch_bounds__(256)
    cross_entropy_backward_flat_kernel(const CrossEntropyBackwardArgs<T> p, int head, std::int64_t vectors) {
  constexpr int kVec = kVector16<T>;
  const std::int64_t n = p.rows * p.vocab;
  const std::int64_t tail = head + vectors * kVec;
  const auto one = [&](std::int64_t i) {
    const std::int64_t row = i / p.vocab;
    const RowGradient g = backward_row_gradient(p, row);
    p.dlogits[i] =
        from_float<T>(g.zero ? 0.0f : gradient_of<kCapped>(to_float(p.logits[i]), i - row * p.vocab == g.target, g));
  };
  const std::int64_t first = global_thread_index(), step = global_thread_count();
  if (first < head) one(first);
  if (first < n - tail) one(tail + first);
  const bool small = n <= 0xffffffff;
  for (std::int64_t v0 = first; v0 < vectors; v0 += step * kFlatVectors) {
    Vector16<T> x[kFlatVectors];
#pragma unroll
    for (int u = 0; u < kFlatVectors; ++u)
      if (v0 + u * step < vectors) x[u] = load_vector16(p.logits + head + (v0 + u * step) * kVec);
#pragma unroll
    for (int u = 0; u < kFlatVectors; ++u) {
      if (v0 + u * step >= vectors) continue;
      const std::int64_t start = head + (v0 + u * step) * kVec;
      // A 32-bit division where the array allows it (a few instructions, not a 64-bit call).
      std::int64_t row =
          small ? static_cast<std::uint32_t>(start) / static_cast<std::uint32_t>(p.vocab) : start / p.vocab;
      std::int64_t column = start - row * p.vocab;
      RowGradient g = backward_row_gradient(p, row);
      Vector16<T> dx;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        if (column == p.vocab) {  // the next row starts inside this vector
          ++row;
          column = 0;
          g = backward_row_gradient(p, row);
        }
        dx[k] = from_float<T>(g.zero ? 0.0f : gradient_of<kCapped>(to_float(x[u][k]), column == g.target, g));
        ++column;
      }
      store_vector16(p.dlogits + start, dx);
    }
  }
}

// Every thread reads the scale and leaves at 1; element accesses (this pass runs only for an
// incoming gradient other than 1).
template <typename T>
__global__ void scale_gradient_kernel(T* x, std::int64_t n, const float* scale) {
  const float s = *scale;
  if (s == 1.0f) return;
  for (std::int64_t i = global_thread_index(); i < n; i += global_thread_count())
    x[i] = from_float<T>(to_float(x[i]) * s);
}

// 16-byte accesses over the rows' bodies when the gradient's rows lie as far from a 16-byte
// boundary as the logits' (true of any vocab for two 16-byte aligned arrays) and the logits are
// element aligned (row_body counts the head in elements).
template <typename T>
bool bodies_match(const T* logits, const T* dlogits) {
  const auto at = [](const T* a) { return reinterpret_cast<std::uintptr_t>(a); };
  return at(logits) % sizeof(T) == 0 && (dlogits == nullptr || (at(logits) - at(dlogits)) % 16 == 0);
}

// A grid of kThreads-thread blocks, one per row or (persistent) one per SM: 16-byte accesses over
// the rows' bodies where `vectors`, the capped kernel where the softcap is on.
template <typename T, int kThreads>
void launch_forward(const CrossEntropyArgs<T>& args, bool vectors, bool persistent, cudaStream_t stream) {
  const auto blocks =
      static_cast<unsigned>(persistent ? std::min<std::int64_t>(args.rows, current_gpu().sm_count) : args.rows);
  auto* kernel = with_flags(
      [](auto capped, auto vectorized) {
        return cross_entropy_kernel < T, decltype(vectorized)::value ? kVector16<T> : 1, kThreads, capped > ;
      },
      args.softcap > 0.0f, vectors);
  kernel<<<blocks, kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

// The resident rung: 512-thread blocks, as many as fit at once, walking the rows; each holds its
// row (and up to 16 bytes of alignment) in shared memory.
template <typename T>
void launch_resident(const CrossEntropyArgs<T>& args, bool vectors, cudaStream_t stream) {
  constexpr int kThreads = 512;
  auto* kernel = with_flags(
      [](auto capped, auto vectorized) {
        return cross_entropy_kernel < T, decltype(vectorized)::value ? kVector16<T> : 1, kThreads, capped, true > ;
      },
      args.softcap > 0.0f, vectors);
  const auto shared_bytes = static_cast<std::size_t>(args.vocab) * sizeof(T) + 16;
  set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), shared_bytes);
  const int blocks = resident_grid_size(kernel, kThreads, args.rows * kThreads, shared_bytes);
  kernel<<<blocks, kThreads, shared_bytes, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

// The pipelined rung's launch: one 1024-thread block an SM, two row buffers each.
template <typename T>
void launch_pipelined(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  constexpr int kThreads = 1024;
  auto* kernel = args.softcap > 0.0f ? cross_entropy_pipelined_kernel<T, kThreads, true>
                                     : cross_entropy_pipelined_kernel<T, kThreads, false>;
  const std::int64_t buffer_elements =
      pipelined_buffer_bytes(args.vocab, sizeof(T)) / static_cast<std::int64_t>(sizeof(T));
  const auto shared_bytes = static_cast<std::size_t>(2 * buffer_elements) * sizeof(T);
  set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), shared_bytes);
  const int blocks = resident_grid_size(kernel, kThreads, args.rows * kThreads, shared_bytes);
  kernel<<<blocks, kThreads, shared_bytes, stream>>>(args, buffer_elements);
  CUDALAB_CHECK_LAUNCH();
}

// The cluster rung's launch: persistent clusters of cluster_ctas(vocab) CTAs of kClusterThreads,
// each with its share of a row in shared memory.
template <typename T>
void launch_cluster(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  const int size = cluster_ctas(args.vocab, sizeof(T));
  const std::int64_t vectors = args.vocab * static_cast<std::int64_t>(sizeof(T)) / 16;
  const std::int64_t share_vectors = ceil_div<std::int64_t>(vectors, size);
  auto* kernel = args.softcap > 0.0f ? cross_entropy_cluster_kernel<T, true> : cross_entropy_cluster_kernel<T, false>;
  const auto shared_bytes = static_cast<std::size_t>(share_vectors) * 16;
  launch_persistent_clusters(kernel, size, kClusterThreads, shared_bytes, args.rows, stream, "cross_entropy cluster",
                             args, share_vectors);
}

}  // namespace

template <typename T>
void online_scalar(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  CUDALAB_REQUIRE(args.rows <= 0x7fffffff, "cross_entropy online_scalar: more than 2^31-1 rows (a block per row)");
  launch_forward<T, 512>(args, false, false, stream);
}

template <typename T>
void online_vectorized(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  CUDALAB_REQUIRE(args.rows <= 0x7fffffff, "cross_entropy online_vectorized: more than 2^31-1 rows (a block per row)");
  launch_forward<T, 512>(args, bodies_match(args.logits, args.dlogits), false, stream);
}

template <typename T>
void persistent(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  launch_forward<T, 1024>(args, bodies_match(args.logits, args.dlogits), true, stream);
}

namespace {
// What the rows may take of a block's shared memory: the kernels' static reduction scratch (1,408
// bytes, cuobjdump) and room to spare stay out.
std::size_t shared_memory_for_rows(std::size_t shared_memory_optin) {
  constexpr std::size_t kStaticShared = 2048;
  return shared_memory_optin > kStaticShared ? shared_memory_optin - kStaticShared : 0;
}
}  // namespace

std::string resident_limits(std::int64_t vocab, std::size_t element_bytes, std::size_t shared_memory_optin) {
  // A row and its alignment.
  const std::size_t room = std::min(kResidentRowBytes, shared_memory_for_rows(shared_memory_optin));
  const std::int64_t bytes = vocab * static_cast<std::int64_t>(element_bytes);
  if (bytes > static_cast<std::int64_t>(room))
    return "a row of " + std::to_string(bytes) + " bytes does not fit the " + std::to_string(room) +
           " bytes of shared memory the rung gives a row on this GPU";
  return "";
}

template <typename T>
void resident(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  const std::string why = resident_limits(args.vocab, sizeof(T), shared_memory_optin());
  CUDALAB_REQUIRE(why.empty(), "cross_entropy resident: " + why);
  if (args.rows == 0) return;
  launch_resident(args, bodies_match(args.logits, args.dlogits), stream);
}

std::int64_t pipelined_buffer_bytes(std::int64_t vocab, std::size_t element_bytes) {
  // A row, up to 16 bytes of its alignment, rounded to whole 16-byte vectors.
  return (vocab * static_cast<std::int64_t>(element_bytes) + 16 + 15) / 16 * 16;
}

std::string pipelined_limits(std::int64_t vocab, std::size_t element_bytes, std::size_t shared_memory_optin) {
  const std::int64_t bytes = 2 * pipelined_buffer_bytes(vocab, element_bytes);
  const auto room = static_cast<std::int64_t>(shared_memory_for_rows(shared_memory_optin));
  if (bytes > room)
    return "two rows of " + std::to_string(vocab * static_cast<std::int64_t>(element_bytes)) +
           " bytes do not fit the " + std::to_string(room) + " bytes of shared memory a block has on this GPU";
  return "";
}

template <typename T>
void pipelined(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  const std::string why = pipelined_limits(args.vocab, sizeof(T), shared_memory_optin());
  CUDALAB_REQUIRE(why.empty(), "cross_entropy pipelined: " + why);
  CUDALAB_REQUIRE(bodies_match(args.logits, args.dlogits),
                  "cross_entropy pipelined: the gradient's rows must lie as far from a 16-byte boundary as the "
                  "logits' (and the logits element aligned)");
  if (args.rows == 0) return;
  launch_pipelined(args, stream);
}

int cluster_ctas(std::int64_t vocab, std::size_t element_bytes) {
  const std::int64_t bytes = vocab * static_cast<std::int64_t>(element_bytes);
  return static_cast<int>(std::max<std::int64_t>(2, ceil_div<std::int64_t>(bytes, kClusterShareBytes)));
}

std::string cluster_limits(std::int64_t vocab, std::size_t element_bytes, int compute_capability) {
  if (compute_capability < 90) return "needs thread-block clusters (compute capability 9.0+)";
  if (cluster_ctas(vocab, element_bytes) > kMaxClusterCtas)
    return "a row of " + std::to_string(vocab * static_cast<std::int64_t>(element_bytes)) + " bytes needs more than " +
           std::to_string(kMaxClusterCtas) + " CTAs of " + std::to_string(kClusterShareBytes) + " bytes";
  return "";
}

template <typename T>
void cluster(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  const std::string why = cluster_limits(args.vocab, sizeof(T), current_gpu().compute_capability);
  CUDALAB_REQUIRE(why.empty(), "cross_entropy cluster: " + why);
  CUDALAB_REQUIRE(bodies_match(args.logits, args.dlogits),
                  "cross_entropy cluster: the gradient's rows must lie as far from a 16-byte boundary as the "
                  "logits' (and the logits element aligned)");
  if (args.rows == 0) return;
  launch_cluster(args, stream);
}

LibraryRung library_rung(const RowsAndGpu& c) {
  const int sms = c.sm_count;
  const bool two_resident =
      static_cast<std::size_t>(c.vocab) * c.element_bytes + 16 <= shared_memory_for_rows(c.shared_memory_optin / 2);
  if (!two_resident && !c.capped && c.bodies_match && c.compute_capability == 90 &&
      cluster_limits(c.vocab, c.element_bytes, c.compute_capability).empty() &&
      (c.rows >= 3 * std::int64_t{sms} || 2 * c.rows <= sms)) {
    return LibraryRung::cluster;
  }
  if (c.rows < 2 * std::int64_t{sms} || c.rows > 0x7fffffff) return LibraryRung::persistent;
  return two_resident ? LibraryRung::resident : LibraryRung::online_vectorized;
}

template <typename T>
void library_choice(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  const CurrentGpu gpu = current_gpu();
  switch (library_rung({args.rows, args.vocab, sizeof(T), args.softcap > 0.0f, bodies_match(args.logits, args.dlogits),
                        gpu.sm_count, gpu.compute_capability, shared_memory_optin()})) {
    case LibraryRung::resident: return resident(args, stream);
    case LibraryRung::online_vectorized: return online_vectorized(args, stream);
    case LibraryRung::persistent: return persistent(args, stream);
    case LibraryRung::cluster: return cluster(args, stream);
  }
}

template <typename T>
void scale_gradient(T* x, std::int64_t n, const float* scale, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  scale_gradient_kernel<T>
      <<<resident_grid_size(scale_gradient_kernel<T>, kThreads, n), kThreads, 0, stream>>>(x, n, scale);
  CUDALAB_CHECK_LAUNCH();
}

template <typename T>
void backward_persistent(const CrossEntropyBackwardArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  constexpr int kThreads = 1024;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(args.rows, current_gpu().sm_count));
  auto* kernel = with_flags(
      [](auto capped, auto vectorized) {
        return cross_entropy_backward_kernel < T, decltype(vectorized)::value ? kVector16<T> : 1, kThreads, capped > ;
      },
      args.softcap > 0.0f, bodies_match(args.logits, args.dlogits));
  kernel<<<blocks, kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

template <typename T>
void backward_flat(const CrossEntropyBackwardArgs<T>& args, cudaStream_t stream) {
  CUDALAB_REQUIRE(bodies_match(args.logits, args.dlogits),
                  "cross_entropy_backward flat: the gradient must lie as far from a 16-byte boundary as the logits "
                  "(and the logits element aligned)");
  const std::int64_t n = args.rows * args.vocab;
  if (n == 0) return;
  constexpr int kVec = kVector16<T>;
  const auto misaligned = static_cast<int>(reinterpret_cast<std::uintptr_t>(args.logits) % 16 / sizeof(T));
  const auto head = static_cast<int>(std::min<std::int64_t>((kVec - misaligned) % kVec, n));
  const std::int64_t vectors = (n - head) / kVec;
  auto* kernel =
      args.softcap > 0.0f ? cross_entropy_backward_flat_kernel<T, true> : cross_entropy_backward_flat_kernel<T, false>;
  constexpr int kThreads = 256;
  // At least a thread for each element outside the vectors (fewer than two vectors' worth).
  const int blocks = resident_grid_size(
      kernel, kThreads, std::max<std::int64_t>(ceil_div<std::int64_t>(vectors, kFlatVectors), 2 * kVec));
  kernel<<<blocks, kThreads, 0, stream>>>(args, head, vectors);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, online_scalar, CrossEntropyArgs)
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, online_vectorized, CrossEntropyArgs)
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, persistent, CrossEntropyArgs)
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, resident, CrossEntropyArgs)
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, pipelined, CrossEntropyArgs)
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, cluster, CrossEntropyArgs)
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, library_choice, CrossEntropyArgs)
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_persistent, CrossEntropyBackwardArgs)
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_flat, CrossEntropyBackwardArgs)

#define CUDALAB_SCALE_GRADIENT_INSTANCE(T, a, b) \
  template void scale_gradient<T>(T*, std::int64_t, const float*, cudaStream_t);
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_SCALE_GRADIENT_INSTANCE, , )

}  // namespace cudalab::cross_entropy_variants
