// Where an attention array's rows lie (AttentionStrides), as the kernels that read other layouts
// than dense see it: row offsets for plain loads and stores, TMA maps for the Hopper kernels.
#pragma once

#include <cstdint>

#include "core/hopper.cuh"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {

// The element offset of row r of [batch, heads, seq] rows (r = (b * heads + h) * seq + i) at `s`.
__host__ __device__ __forceinline__ std::int64_t row_offset(const AttentionStrides& s, std::int64_t r,
                                                            std::int64_t heads, std::int64_t seq) {
  const std::int64_t z = r / seq, i = r - z * seq, b = z / heads, h = z - b * heads;
  return b * s.batch + h * s.head + i * s.row;
}

// Sequence b's rows [begin, begin + count) of a variable-length batch's array of `total` rows, by
// the batch's cumulative lengths, held inside the array whatever `cumulative` holds.
struct PackedRows {
  std::int64_t begin, count;
};
__device__ __forceinline__ PackedRows packed_rows(const std::int32_t* cumulative, int b, std::int64_t total) {
  const std::int64_t begin = min(max(static_cast<std::int64_t>(cumulative[b]), std::int64_t{0}), total);
  const std::int64_t end = min(max(static_cast<std::int64_t>(cumulative[b + 1]), begin), total);
  return {begin, end - begin};
}

// The rows of k and v (and dK, dV): seq, or a variable-length batch's key rows.
template <typename Args>
std::int64_t key_rows(const Args& args) {
  return args.varlen.on() ? args.varlen.keys : args.seq;
}

#if CUDALAB_SM90A
// The TMA map of [batch, heads, rows, head_dim] of `args`' batch and head_dim (heads: the array's
// own count, kv_heads for k and v; rows: seq, or key_rows for k and v) at `strides`, in boxes of
// box_rows rows x 128 bytes of dimensions: four dimensions {column, row, head, batch}.
template <typename T, typename Args>
CUtensorMap head_tensor_map(const T* base, const AttentionStrides& strides, const Args& args, std::int64_t heads,
                            std::int64_t rows, int box_rows) {
  const AttentionStrides s = resolved(strides, heads, rows, args.head_dim);
  return hopper::make_tensor_map_4d(base, {args.head_dim, rows, heads, args.batch}, {s.row, s.head, s.batch}, box_rows);
}
#endif

}  // namespace cudalab::attention_variants
