// What the fused backward rungs (`mma` on mma.sync, `wgmma` on Hopper) share around their main
// kernel: the argument checks, the workspace (dQ's fp32 accumulator, then D_i), D_i = dO_i . O_i by
// a pre-kernel, and the last kernel that scales dQ's accumulator and rounds it to T. Both main
// kernels add their dQ contributions to the accumulator with fp32 atomics, so dQ's sums are not in
// a fixed order; dK and dV are written once.
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

// D_i = dO_i . O_i in fp32, a warp per row; O's and dO's rows where o_strides and do_strides say.
template <typename T>
__global__ void __launch_bounds__(256)
    delta_kernel(const T* __restrict__ o, AttentionStrides o_strides, const T* __restrict__ d_o,
                 AttentionStrides do_strides, float* __restrict__ delta, std::int64_t rows, std::int64_t heads,
                 std::int64_t seq, std::int64_t dim) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows) return;
  const T* o_row = o + row_offset(o_strides, row, heads, seq);
  const T* do_row = d_o + row_offset(do_strides, row, heads, seq);
  float sum = 0.0f;
  for (std::int64_t d = lane; d < dim; d += 32) sum += to_float(do_row[d]) * to_float(o_row[d]);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) delta[row] = sum;
}

// dQ = scale * the (dense) fp32 accumulator, rounded to T, into rows where dq_strides says: 8
// elements a thread (head_dim and the strides are multiples of 8, dq 16-byte aligned).
template <typename T>
__global__ void __launch_bounds__(256)
    dq_kernel(const float* __restrict__ accumulator, T* __restrict__ dq, AttentionStrides dq_strides, std::int64_t n,
              std::int64_t heads, std::int64_t seq, std::int64_t dim, float scale) {
  const std::int64_t i = (static_cast<std::int64_t>(blockIdx.x) * 256 + threadIdx.x) * 8;
  if (i >= n) return;
  const std::int64_t row = i / dim;
  const float4 lo = *reinterpret_cast<const float4*>(accumulator + i);
  const float4 hi = *reinterpret_cast<const float4*>(accumulator + i + 4);
  const uint4 packed{pack_pair<T>(scale * lo.x, scale * lo.y), pack_pair<T>(scale * lo.z, scale * lo.w),
                     pack_pair<T>(scale * hi.x, scale * hi.y), pack_pair<T>(scale * hi.z, scale * hi.w)};
  *reinterpret_cast<uint4*>(dq + row_offset(dq_strides, row, heads, seq) + (i - row * dim)) = packed;
}

// Checks `args` for rung `name` (whose limits gave `why`), zeroes dQ's accumulator, computes D_i,
// runs `main(delta, dq_accumulator)` and converts dQ.
template <typename T, typename Main>
void run(const char* name, const std::string& why, const AttentionBackwardArgs<T>& args, cudaStream_t stream,
         Main&& main) {
  if (!ready_to_launch(name, why, args, mma_backward_workspace_bytes(args.batch, args.heads, args.seq, args.head_dim)))
    return;
  CUDALAB_REQUIRE(is_aligned16(args.q) && is_aligned16(args.k) && is_aligned16(args.v) && is_aligned16(args.d_o) &&
                      is_aligned16(args.dq) && is_aligned16(args.dk) && is_aligned16(args.dv),
                  std::string(name) + ": q, k, v, do, dq, dk and dv must be 16-byte aligned");
  CUDALAB_REQUIRE(strides_in_vectors(args.layout), std::string(name) + ": every stride must be a multiple of 8");
  const std::int64_t rows = args.batch * args.heads * args.seq, dq_count = rows * args.head_dim;
  auto* dq_accumulator = static_cast<float*>(args.workspace);
  float* delta = dq_accumulator + dq_count;
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(dq_accumulator, 0, static_cast<std::size_t>(dq_count) * sizeof(float), stream));
  const auto strides = [&](const AttentionStrides& s) { return resolved(s, args.heads, args.seq, args.head_dim); };
  delta_kernel<T><<<static_cast<unsigned>(ceil_div<std::int64_t>(rows, 8)), 256, 0, stream>>>(
      args.o, strides(args.layout.o), args.d_o, strides(args.layout.d_o), delta, rows, args.heads, args.seq,
      args.head_dim);
  CUDALAB_CHECK_LAUNCH();
  main(delta, dq_accumulator);
  dq_kernel<T><<<static_cast<unsigned>(ceil_div<std::int64_t>(dq_count, 8 * 256)), 256, 0, stream>>>(
      dq_accumulator, args.dq, strides(args.layout.dq), dq_count, args.heads, args.seq, args.head_dim, args.scale);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace fused_backward
}  // namespace cudalab::attention_variants
