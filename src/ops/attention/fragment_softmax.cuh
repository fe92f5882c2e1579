// The softmax arithmetic of the tensor-core attention rungs on a thread's accumulator fragments:
// the forward's masks, online softmax, P packing and normalized output (rungs mma, mma_pipelined,
// wgmma, wgmma_pingpong), the backward's masked probabilities, dS and dK/dV stores (backward rungs
// mma and wgmma).
//
// mma.sync m16n8k16 and wgmma m64nNk16 leave a thread the same C layout per n8 tile i (g = lane / 4):
// register 4i + 2r + e at row g + 8r, column 8i + 2(lane % 4) + e. mma.sync kernels hold it as
// float[tiles][4], wgmma kernels as float[4 * tiles]; fragment_register reads either, so one helper
// serves both. Every index is a constant once the loops are unrolled: the fragments stay in
// registers, and the helpers add no instructions.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "core/fast_math.cuh"
#include "core/mma_sync.cuh"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {

// Register n of a fragment held flat.
template <typename E, int kCount>
__device__ __forceinline__ E& fragment_register(E (&fragment)[kCount], int n) {
  return fragment[n];
}

// Register n of a fragment held as tiles of four (mma.sync's C, or a packed A fragment).
template <typename E, int kTiles>
__device__ __forceinline__ E& fragment_register(E (&fragment)[kTiles][4], int n) {
  return fragment[n / 4][n % 4];
}

// The registers of a fragment in either form.
template <typename Fragment>
inline constexpr int kFragmentRegisters = static_cast<int>(sizeof(Fragment) /
                                                           sizeof(std::remove_all_extents_t<Fragment>));

// The causal mask alone, for kernels built for no window: one compare a score where KeyWindow's
// sees() takes two (measured: the forward's first tile with the window's test cost the Hopper
// kernel 2-14% at seq 1024-4096).
struct CausalMask {
  bool causal;
  __device__ bool sees(std::int64_t query, std::int64_t key) const { return !causal || key <= query; }
};

// The scores of a tile whose first key is key0 that the thread's rows (row_g, row_g + 8) do not see
// become -inf: keys past the sequence, and keys the mask (a KeyWindow or a CausalMask) hides.
template <typename Fragment, typename Mask>
__device__ __forceinline__ void mask_scores(Fragment& s, std::int64_t key0, std::int64_t row_g, std::int64_t seq,
                                            const Mask& window, int lane) {
#pragma unroll
  for (int i = 0; i < kFragmentRegisters<Fragment> / 4; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t key = key0 + 8 * i + 2 * (lane % 4) + (e & 1), row = row_g + 8 * (e / 2);
      if (key >= seq || !window.sees(row, key)) fragment_register(s, 4 * i + e) = -INFINITY;
    }
}

// The online softmax state of a thread's two rows: the running max (in score units) and sum (this
// lane's part; the quad's total at the end).
struct SoftmaxRows {
  float max[2] = {-INFINITY, -INFINITY};
  float sum[2] = {0.0f, 0.0f};
};

// Turns a tile's scores into unnormalized probabilities 2^(S c - m c) (c = scale log2 e, folded
// into one FMA before ex2) against the updated row maxima, adds them to the row sums, and returns
// each row's factor for O, 2^((m_old - m_new) c).
template <typename Fragment>
__device__ __forceinline__ float2 online_softmax(Fragment& s, SoftmaxRows& rows, float exponent_scale) {
  constexpr int kTiles = kFragmentRegisters<Fragment> / 4;
  float correction[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
      tile_max = fmaxf(tile_max, fmaxf(fragment_register(s, 4 * i + 2 * r), fragment_register(s, 4 * i + 2 * r + 1)));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float new_max = fmaxf(rows.max[r], tile_max);
    // A row whose keys so far are all masked keeps max -inf; 0 stands in so that no (-inf) - (-inf)
    // appears (its probabilities are 0 either way).
    const float max_scaled = new_max == -INFINITY ? 0.0f : new_max * exponent_scale;
    correction[r] = fast_exp2(rows.max[r] * exponent_scale - max_scaled);
    rows.max[r] = new_max;
    float tile_sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = fragment_register(s, 4 * i + 2 * r + e);
        x = fast_exp2(fmaf(x, exponent_scale, -max_scaled));
        tile_sum += x;
      }
    rows.sum[r] = rows.sum[r] * correction[r] + tile_sum;
  }
  return make_float2(correction[0], correction[1]);
}

// O's rows times the factors online_softmax returned.
template <typename Fragment>
__device__ __forceinline__ void rescale_rows(Fragment& o, float2 correction) {
#pragma unroll
  for (int i = 0; i < kFragmentRegisters<Fragment> / 4; ++i) {
    fragment_register(o, 4 * i) *= correction.x;
    fragment_register(o, 4 * i + 1) *= correction.x;
    fragment_register(o, 4 * i + 2) *= correction.y;
    fragment_register(o, 4 * i + 3) *= correction.y;
  }
}

// Adjacent registers rounded to T and packed in pairs: a C fragment's n8 tiles 2j and 2j + 1 become
// the A fragment of k-step j of the next product (P V, dV, dK), never stored.
template <typename T, typename Packed, typename Fragment>
__device__ __forceinline__ void pack_fragment(Packed& packed, const Fragment& c) {
  static_assert(2 * kFragmentRegisters<Packed> == kFragmentRegisters<Fragment>, "one 32-bit word per pair");
#pragma unroll
  for (int n = 0; n < kFragmentRegisters<Packed>; ++n)
    fragment_register(packed, n) = pack_pair<T>(fragment_register(c, 2 * n), fragment_register(c, 2 * n + 1));
}

// The thread's two rows of O (row_g and row_g + 8 of the matrix whose rows start at row_base)
// divided by their sums, each pair as T handed to write_pair(r, i, pair) (row row_g + 8 r, columns
// 8 i + 2 (lane % 4) and + 1), with each row's log-sum-exp (natural log) for the backward; rows
// past the sequence are left alone. kRowsMayBeEmpty: a row may have seen no key (sum 0), and gets
// O = 0 and L = -inf.
template <typename T, int kHeadDim, bool kRowsMayBeEmpty = false, typename Fragment, typename WritePair>
__device__ __forceinline__ void normalize_output_rows(const Fragment& o, const SoftmaxRows& rows, float* lse_rows,
                                                      std::int64_t row_g, std::int64_t seq, float scale, int lane,
                                                      WritePair write_pair) {
  static_assert(2 * kFragmentRegisters<Fragment> == kHeadDim, "a thread holds 2 x head_dim / 4 of O");
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = rows.sum[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const std::int64_t row = row_g + 8 * r;
    if (row >= seq) continue;
    const float inverse = kRowsMayBeEmpty && sum == 0.0f ? 0.0f : 1.0f / sum;
#pragma unroll
    for (int i = 0; i < kHeadDim / 8; ++i)
      write_pair(r, i,
                 pack_pair<T>(fragment_register(o, 4 * i + 2 * r) * inverse,
                              fragment_register(o, 4 * i + 2 * r + 1) * inverse));
    if (lane % 4 == 0) lse_rows[row] = rows.max[r] * scale + logf(sum);
  }
}

// As normalize_output_rows, O's pairs stored straight to its rows at `o_rows` (row_stride apart),
// those of its first `columns` (a multiple of 8: a head_dim padded to the kernel's kHeadDim).
template <typename T, int kHeadDim, bool kRowsMayBeEmpty = false, typename Fragment>
__device__ __forceinline__ void store_output_rows(const Fragment& o, const SoftmaxRows& rows, T* o_rows,
                                                  std::int64_t row_stride, float* lse_rows, std::int64_t row_g,
                                                  std::int64_t seq, float scale, int lane, int columns = kHeadDim) {
  normalize_output_rows<T, kHeadDim, kRowsMayBeEmpty>(
      o, rows, lse_rows, row_g, seq, scale, lane, [&](int r, int i, std::uint32_t pair) {
        if (kHeadDim == columns || 8 * i < columns)
          *reinterpret_cast<std::uint32_t*>(o_rows + (row_g + 8 * r) * row_stride + 2 * (lane % 4) + 8 * i) = pair;
      });
}

// A tile's per-query values (L c or D) at the columns of a thread's accumulator fragment: value(i,
// j) is query column 8i + 2 quad + j. SharedRowValues reads them where they lie in shared memory,
// times `factor`; RegisterRowValues holds a copy in registers, loaded ahead of the wait for the
// fragment so that the loads' latency is hidden behind the tensor cores.
struct SharedRowValues {
  const float* rows;
  int quad;
  float factor;
  __device__ __forceinline__ float value(int i, int j) const { return rows[8 * i + 2 * quad + j] * factor; }
};

template <int kColumnGroups>
struct RegisterRowValues {
  float values[2 * kColumnGroups];
  __device__ __forceinline__ void load(const SharedRowValues& from) {
#pragma unroll
    for (int i = 0; i < kColumnGroups; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) values[2 * i + j] = from.value(i, j);
  }
  __device__ __forceinline__ float value(int i, int j) const { return values[2 * i + j]; }
};

// The backward's P^T = 2^(S^T c - L c) in place of S^T (keys as rows: register 4i + 2r + e is key
// key_g + 8r, query q0 + 8i + 2 quad + e), from L c of the tile's queries in `lse`; with kMasked, 0
// where the query does not see the key: either past the sequence, or outside the query's window
// (the zero rows past the sequence would give 2^(-L c)). Queries are positions: in a
// variable-length batch a row plus its sequence's shift, which end where its keys do (seq).
template <bool kMasked, typename Index, typename Fragment, typename RowValues>
__device__ __forceinline__ void backward_probabilities(Fragment& s, Index key_g, Index q0, Index seq,
                                                       const BasicKeyWindow<Index>& window, int quad,
                                                       const RowValues& lse, float exponent_scale) {
#pragma unroll
  for (int i = 0; i < kFragmentRegisters<Fragment> / 4; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int column = 8 * i + 2 * quad + (e & 1);
      const Index key = key_g + 8 * (e / 2), query = q0 + column;
      const bool visible = !kMasked || (key < seq && query < seq && window.sees(query, key));
      float& x = fragment_register(s, 4 * i + e);
      x = visible ? fast_exp2(fmaf(x, exponent_scale, -lse.value(i, e & 1))) : 0.0f;
    }
}

// dS^T = P^T (dP^T - D) in place of dP^T, D of the tile's queries in `delta`.
template <typename Fragment, typename RowValues>
__device__ __forceinline__ void score_gradients(Fragment& dp, const Fragment& p, const RowValues& delta) {
#pragma unroll
  for (int i = 0; i < kFragmentRegisters<Fragment> / 4; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float& x = fragment_register(dp, 4 * i + e);
      x = fragment_register(p, 4 * i + e) * (x - delta.value(i, e & 1));
    }
}

// dK (times the scale) and dV of the thread's keys (key_g, key_g + 8) inside the sequence (every
// key with kEveryKey, for a staging tile whose rows past the sequence TMA leaves out), each pair as
// T handed to write(r, i, dk_pair, dv_pair) (key key_g + 8 r, dimensions 8 i + 2 quad and + 1).
template <typename T, int kHeadDim, bool kEveryKey = false, typename Fragment, typename Index, typename WritePairs>
__device__ __forceinline__ void key_gradient_pairs(const Fragment& dk, const Fragment& dv, Index key_g, Index seq,
                                                   float scale, WritePairs write) {
  static_assert(2 * kFragmentRegisters<Fragment> == kHeadDim, "a thread holds 2 x head_dim / 4 of dK and of dV");
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const std::int64_t key = key_g + 8 * r;
    if (!kEveryKey && key >= seq) continue;
#pragma unroll
    for (int i = 0; i < kHeadDim / 8; ++i)
      write(
          r, i,
          pack_pair<T>(scale * fragment_register(dk, 4 * i + 2 * r), scale * fragment_register(dk, 4 * i + 2 * r + 1)),
          pack_pair<T>(fragment_register(dv, 4 * i + 2 * r), fragment_register(dv, 4 * i + 2 * r + 1)));
  }
}

// As key_gradient_pairs, stored straight to rows of the [seq, kHeadDim] matrices dk_rows and
// dv_rows (rows dk_stride and dv_stride elements apart), their first `columns` (a multiple of 8: a
// head_dim padded to the kernel's kHeadDim).
template <typename T, int kHeadDim, typename Fragment, typename Index>
__device__ __forceinline__ void store_key_gradients(const Fragment& dk, const Fragment& dv, T* dk_rows,
                                                    std::int64_t dk_stride, T* dv_rows, std::int64_t dv_stride,
                                                    Index key_g, Index seq, float scale, int quad,
                                                    int columns = kHeadDim) {
  key_gradient_pairs<T, kHeadDim>(dk, dv, key_g, seq, scale,
                                  [&](int r, int i, std::uint32_t dk_pair, std::uint32_t dv_pair) {
                                    if (kHeadDim != columns && 8 * i >= columns) return;
                                    const std::int64_t key = key_g + 8 * r;
                                    const int column = 8 * i + 2 * quad;
                                    *reinterpret_cast<std::uint32_t*>(dk_rows + key * dk_stride + column) = dk_pair;
                                    *reinterpret_cast<std::uint32_t*>(dv_rows + key * dv_stride + column) = dv_pair;
                                  });
}

}  // namespace cudalab::attention_variants
