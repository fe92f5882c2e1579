// What the fused backward rungs (`mma` on mma.sync, `wgmma` on Hopper) share around their main
// kernel: the argument checks, the workspace (dQ's fp32 accumulator, then D_i), D_i = dO_i . O_i by
// a pre-kernel that also zeroes the accumulator, and the last kernel that scales dQ's accumulator
// and rounds it to T. Both main kernels add their dQ contributions to the accumulator with fp32
// atomics, so dQ's sums are not in a fixed order; dK and dV are written once.
#pragma once

#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/mma_sync.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/layout.cuh"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {
namespace fused_backward {

// D_i = dO_i . O_i in fp32 and row i of dQ's accumulator zeroed, in one pass: kLanes threads a row,
// one 16-byte vector of O and of dO each (the accumulator's 8 kLanes columns; lanes past head_dim
// read nothing), summed by shuffles within the row's lanes. O's and dO's rows lie where o_strides
// and do_strides say (multiples of 8 elements from 16-byte aligned arrays). One pass at 16 bytes a
// load where a warp a row with 2-byte loads and a separate memset took two.
template <typename T, int kLanes>
__global__ void __launch_bounds__(256)
    prepare_kernel(const T* __restrict__ o, AttentionStrides o_strides, const T* __restrict__ d_o,
                   AttentionStrides do_strides, float* __restrict__ delta, float* __restrict__ dq_accumulator,
                   std::int64_t rows, std::int64_t heads, std::int64_t seq, int head_dim) {
  static_assert(32 % kLanes == 0, "a row's lanes lie in one warp");
  constexpr int kDim = kLanes * kVector16<T>;
  const std::int64_t row = (static_cast<std::int64_t>(blockIdx.x) * 256 + threadIdx.x) / kLanes;
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  if (row >= rows) return;  // whole rows leave together, and each row shuffles among its own lanes
  const unsigned row_lanes = (kLanes == 32 ? 0xffffffffu : (1u << kLanes) - 1u)
                             << (static_cast<int>(threadIdx.x) % 32 / kLanes * kLanes);
  float sum = 0.0f;
  if (lane * kVector16<T> < head_dim) {
    const Vector16<T> x = load_vector16(o + row_offset(o_strides, row, heads, seq) + lane * kVector16<T>);
    const Vector16<T> dy = load_vector16(d_o + row_offset(do_strides, row, heads, seq) + lane * kVector16<T>);
#pragma unroll
    for (int i = 0; i < kVector16<T>; ++i) sum += to_float(dy[i]) * to_float(x[i]);
  }
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(row_lanes, sum, offset, kLanes);
  float4* zeros = reinterpret_cast<float4*>(dq_accumulator + row * kDim + lane * kVector16<T>);
#pragma unroll
  for (int i = 0; i < kVector16<T> / 4; ++i) zeros[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (lane == 0) delta[row] = sum;
}

// dQ = scale * the (dense) fp32 accumulator of n floats in rows of `dim`, rounded to T, into rows
// of head_dim where dq_strides says: 8 elements a thread (dim, head_dim and the strides are
// multiples of 8, dq 16-byte aligned).
template <typename T>
__global__ void __launch_bounds__(256)
    dq_kernel(const float* __restrict__ accumulator, T* __restrict__ dq, AttentionStrides dq_strides, std::int64_t n,
              std::int64_t heads, std::int64_t seq, std::int64_t dim, std::int64_t head_dim, float scale) {
  const std::int64_t i = (static_cast<std::int64_t>(blockIdx.x) * 256 + threadIdx.x) * 8;
  if (i >= n) return;
  const std::int64_t row = i / dim;
  if (i - row * dim >= head_dim) return;
  const float4 lo = *reinterpret_cast<const float4*>(accumulator + i);
  const float4 hi = *reinterpret_cast<const float4*>(accumulator + i + 4);
  const uint4 packed{pack_pair<T>(scale * lo.x, scale * lo.y), pack_pair<T>(scale * lo.z, scale * lo.w),
                     pack_pair<T>(scale * hi.x, scale * hi.y), pack_pair<T>(scale * hi.z, scale * hi.w)};
  *reinterpret_cast<uint4*>(dq + row_offset(dq_strides, row, heads, seq) + (i - row * dim)) = packed;
}

// Checks `args` for rung `name` (whose limits gave `why`), zeroes dQ's accumulator and computes D_i,
// runs `main(delta, dq_accumulator, dq_order)` and converts dQ. dq_order: with args.deterministic,
// dq_order_bytes of zeroed counters after D (null otherwise), for a main kernel that adds dQ's
// parts in a fixed order.
template <typename T, typename Main>
void run(const char* name, const std::string& why, const AttentionBackwardArgs<T>& args, cudaStream_t stream,
         Main&& main) {
  const std::size_t order_bytes = args.deterministic ? dq_order_bytes(args.batch, args.heads, args.seq) : 0;
  if (!ready_to_launch(name, why, args,
                       mma_backward_workspace_bytes(args.batch, args.heads, args.seq, args.head_dim) + order_bytes))
    return;
  CUDALAB_REQUIRE(is_aligned16(args.q) && is_aligned16(args.k) && is_aligned16(args.v) && is_aligned16(args.o) &&
                      is_aligned16(args.d_o) && is_aligned16(args.dq) && is_aligned16(args.dk) && is_aligned16(args.dv),
                  std::string(name) + ": q, k, v, o, do, dq, dk and dv must be 16-byte aligned");
  CUDALAB_REQUIRE(strides_in_vectors(args.layout), std::string(name) + ": every stride must be a multiple of 8");
  const std::int64_t columns = dq_accumulator_columns(args.head_dim);
  const std::int64_t rows = args.batch * args.heads * args.seq, dq_count = rows * columns;
  auto* dq_accumulator = static_cast<float*>(args.workspace);
  float* delta = dq_accumulator + dq_count;
  unsigned* dq_order = args.deterministic ? reinterpret_cast<unsigned*>(delta + rows) : nullptr;
  if (dq_order != nullptr) CUDALAB_CUDA_CHECK(cudaMemsetAsync(dq_order, 0, order_bytes, stream));
  const auto strides = [&](const AttentionStrides& s) { return resolved(s, args.heads, args.seq, args.head_dim); };
  // The rungs' limits hold head_dim to at most 128: the accumulator's rows are 64 or 128 wide.
  auto* prepare = columns == 64 ? prepare_kernel<T, 8> : prepare_kernel<T, 16>;
  const std::int64_t lanes = columns / kVector16<T>;
  prepare<<<static_cast<unsigned>(ceil_div<std::int64_t>(rows * lanes, 256)), 256, 0, stream>>>(
      args.o, strides(args.layout.o), args.d_o, strides(args.layout.d_o), delta, dq_accumulator, rows, args.heads,
      args.seq, static_cast<int>(args.head_dim));
  CUDALAB_CHECK_LAUNCH();
  main(delta, dq_accumulator, dq_order);
  dq_kernel<T><<<static_cast<unsigned>(ceil_div<std::int64_t>(dq_count, 8 * 256)), 256, 0, stream>>>(
      dq_accumulator, args.dq, strides(args.layout.dq), dq_count, args.heads, args.seq, columns, args.head_dim,
      args.scale);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace fused_backward
}  // namespace cudalab::attention_variants
