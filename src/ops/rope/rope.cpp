#include "cudalab/rope.hpp"

#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "cudalab/error.hpp"
#include "ops/rope/variants.hpp"

namespace cudalab {

namespace v = rope_variants;

namespace {

// The checks of both directions, then the vectorized rung (the `positions` rung measured no faster
// in 16-bit types and slower below 32768 positions: docs/rope.md).
template <typename T>
void run(const char* call, const T* in, T* out, const RopeShape& s, const RopeTables& tables, RopePairs pairs,
         std::int64_t position_offset, float sign, cudaStream_t stream) {
  const std::string prefix = std::string(call) + ": ";
  CUDALAB_REQUIRE(s.batch >= 0 && s.seq >= 0 && s.heads >= 0 && s.head_dim >= 0,
                  prefix + "sizes must be >= 0, got batch=" + std::to_string(s.batch) +
                      " seq=" + std::to_string(s.seq) + " heads=" + std::to_string(s.heads) +
                      " head_dim=" + std::to_string(s.head_dim));
  CUDALAB_REQUIRE(s.head_dim % 2 == 0,
                  prefix + "head_dim must be even (dimensions rotate in pairs), got " + std::to_string(s.head_dim));
  CUDALAB_REQUIRE(s.batch_stride >= 0 && s.seq_stride >= 0 && s.heads_stride >= 0, prefix + "strides must be >= 0");
  const std::int64_t rows = checked_product(call, "batch * seq * heads", {s.batch, s.seq, s.heads});
  if (rows == 0 || s.head_dim == 0) return;
  CUDALAB_REQUIRE(position_offset >= 0, prefix + "position_offset must be >= 0");
  CUDALAB_REQUIRE(tables.positions >= position_offset + s.seq,
                  prefix + "the tables hold " + std::to_string(tables.positions) + " positions; position_offset " +
                      std::to_string(position_offset) + " + seq " + std::to_string(s.seq) + " need more");
  CUDALAB_REQUIRE(tables.table_stride >= s.head_dim / 2,
                  prefix + "table_stride must be at least head_dim / 2 = " + std::to_string(s.head_dim / 2));
  // The elements from the first to one past the last a tensor of these strides touches.
  const std::int64_t span =
      (s.batch - 1) * s.batch_stride + (s.seq - 1) * s.seq_stride + (s.heads - 1) * s.heads_stride + s.head_dim;
  const std::int64_t table_span = (tables.positions - 1) * tables.table_stride + s.head_dim / 2;
  const ArraySpan tables_in[] = {{tables.cos, table_span, sizeof(float), "cos"},
                                 {tables.sin, table_span, sizeof(float), "sin"}};
  if (in == out) {
    require_arrays(call, {{in, span, sizeof(T), "x"}, tables_in[0], tables_in[1]}, {});
  } else {
    require_arrays(call, {{in, span, sizeof(T), "x"}, tables_in[0], tables_in[1]}, {{out, span, sizeof(T), "y"}});
  }
  v::RopeArgs<T> args;
  args.x = in, args.y = out, args.shape = s, args.tables = tables;
  args.interleaved = pairs == RopePairs::interleaved;
  args.position_offset = position_offset, args.sign = sign;
  v::vectorized(args, stream);
}

}  // namespace

template <typename T, typename>
void rope(const T* x, T* y, const RopeShape& shape, const RopeTables& tables, RopePairs pairs,
          std::int64_t position_offset, cudaStream_t stream) {
  run("rope", x, y, shape, tables, pairs, position_offset, 1.0f, stream);
}

template <typename T, typename>
void rope_backward(const T* dy, T* dx, const RopeShape& shape, const RopeTables& tables, RopePairs pairs,
                   std::int64_t position_offset, cudaStream_t stream) {
  run("rope_backward", dy, dx, shape, tables, pairs, position_offset, -1.0f, stream);
}

#define CUDALAB_ROPE_ENTRIES(T, a, b)                                                                           \
  template void rope(const T*, T*, const RopeShape&, const RopeTables&, RopePairs, std::int64_t, cudaStream_t); \
  template void rope_backward(const T*, T*, const RopeShape&, const RopeTables&, RopePairs, std::int64_t, cudaStream_t);
CUDALAB_ROPE_ELEMENTS(CUDALAB_ROPE_ENTRIES, , )

}  // namespace cudalab
