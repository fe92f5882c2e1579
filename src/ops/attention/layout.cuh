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

#if CUDALAB_SM90A
// The TMA map of [batch, heads, seq, head_dim] of `args`' batch, seq and head_dim (heads: the
// array's own count, kv_heads for k and v) at `strides`, in boxes of box_rows rows x 128 bytes of
// dimensions: four dimensions {column, row, head, batch}.
template <typename T, typename Args>
CUtensorMap head_tensor_map(const T* base, const AttentionStrides& strides, const Args& args, std::int64_t heads,
                            int box_rows) {
  const AttentionStrides s = resolved(strides, heads, args.seq, args.head_dim);
  return hopper::make_tensor_map_4d(base, {args.head_dim, args.seq, heads, args.batch}, {s.row, s.head, s.batch},
                                    box_rows);
}
#endif

}  // namespace cudalab::attention_variants
