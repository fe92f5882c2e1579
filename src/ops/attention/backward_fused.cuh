// What the fused backward rungs (`mma` on mma.sync, `wgmma` on Hopper) share around their main
// kernel: the argument checks, the workspace (dQ's fp32 accumulator, then D_i), D_i = dO_i . O_i by
// a pre-kernel, and the last kernel that scales dQ's accumulator and rounds it to T. Both main
// kernels add their dQ contributions to the accumulator with fp32 atomics, so dQ's sums are not in
// a fixed order; dK and dV are written once.
#pragma once

#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {
namespace fused_backward {

// D_i = dO_i . O_i in fp32, a warp per row.
template <typename T>
__global__ void __launch_bounds__(256) delta_kernel(const T* __restrict__ o, const T* __restrict__ d_o,
                                                    float* __restrict__ delta, std::int64_t rows, std::int64_t dim) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows) return;
  float sum = 0.0f;
  for (std::int64_t d = lane; d < dim; d += 32) sum += to_float(d_o[row * dim + d]) * to_float(o[row * dim + d]);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) delta[row] = sum;
}

// dQ = scale * the fp32 accumulator, rounded to T.
template <typename T>
__global__ void __launch_bounds__(256)
    dq_kernel(const float* __restrict__ accumulator, T* __restrict__ dq, std::int64_t n, float scale) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (i < n) dq[i] = from_float<T>(scale * accumulator[i]);
}

// Checks `args` for rung `name` (whose limits gave `why`), zeroes dQ's accumulator, computes D_i,
// runs `main(delta, dq_accumulator)` and converts dQ.
template <typename T, typename Main>
void run(const char* name, const std::string& why, const AttentionBackwardArgs<T>& args, cudaStream_t stream,
         Main&& main) {
  if (!ready_to_launch(name, why, args, mma_backward_workspace_bytes(args.batch, args.heads, args.seq, args.head_dim)))
    return;
  CUDALAB_REQUIRE(is_aligned16(args.q) && is_aligned16(args.k) && is_aligned16(args.v) && is_aligned16(args.d_o) &&
                      is_aligned16(args.dk) && is_aligned16(args.dv),
                  std::string(name) + ": q, k, v, do, dk and dv must be 16-byte aligned");
  const std::int64_t rows = args.batch * args.heads * args.seq, dq_count = rows * args.head_dim;
  auto* dq_accumulator = static_cast<float*>(args.workspace);
  float* delta = dq_accumulator + dq_count;
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(dq_accumulator, 0, static_cast<std::size_t>(dq_count) * sizeof(float), stream));
  delta_kernel<T><<<static_cast<unsigned>(ceil_div<std::int64_t>(rows, 8)), 256, 0, stream>>>(args.o, args.d_o, delta,
                                                                                              rows, args.head_dim);
  CUDALAB_CHECK_LAUNCH();
  main(delta, dq_accumulator);
  dq_kernel<T><<<static_cast<unsigned>(ceil_div<std::int64_t>(dq_count, 256)), 256, 0, stream>>>(
      dq_accumulator, args.dq, dq_count, args.scale);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace fused_backward
}  // namespace cudalab::attention_variants
