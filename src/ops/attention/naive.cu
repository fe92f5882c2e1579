// Rung `naive`: attention as three textbook steps, each its own kernel, with the whole score
// matrix of every (batch, head) materialized in fp32 in the workspace:
//   S = scale Q K^T      a 16 x 16 shared-memory tiled matmul (K read as K^T);
//   P = softmax(S)       a block per row, in place over S (scores_softmax.cuh, shared with the cuBLAS
//                        baseline): keys the row does not see (causal, window) become 0; L is
//                        written here;
//   O = P V              the same tiled matmul, P (fp32) times V.
// What it costs, which the later rungs remove: batch * heads * seq^2 floats of workspace (16 GiB at
// 1 x 16 x 16384) written once and read twice, and the causal half of S computed and then thrown
// away. Any head_dim.
#include <cstdint>
#include <limits>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/scores_softmax.cuh"
#include "ops/attention/variants.hpp"

namespace cudalab::attention_variants {
namespace {

constexpr int kTile = 16;                  // the matmuls' square tile: kTile x kTile threads, outputs
constexpr std::int64_t kMaxGridY = 65535;  // gridDim.y and gridDim.z limits

// C[row, column] = alpha * sum_k A[row, k] B[k, column] for the (batch, head) of blockIdx.z: a
// kTile x kTile block computes a kTile x kTile tile of C, stepping over k in kTile-wide slices
// staged in shared memory. A is [rows, inner] row-major; B is [inner, columns] row-major, or, with
// kBTransposed, stored as its transpose [columns, inner] (K for S = Q K^T). B belongs to the kv
// head of the block's query head (grouped-query attention). Out-of-range elements load as 0.
template <bool kBTransposed, typename TA, typename TB, typename TC>
__global__ void __launch_bounds__(kTile* kTile)
    attention_naive_matmul_kernel(const TA* __restrict__ a, const TB* __restrict__ b, TC* __restrict__ c,
                                  std::int64_t rows, std::int64_t columns, std::int64_t inner, std::int64_t heads,
                                  std::int64_t heads_per_kv_head, float alpha) {
  __shared__ float a_tile[kTile][kTile];
  __shared__ float b_tile[kTile][kTile + 1];  // +1: the transposed store hits 16 banks, not one
  const std::int64_t batch_head = blockIdx.z;
  const std::int64_t kv_batch_head =
      (batch_head / heads) * (heads / heads_per_kv_head) + (batch_head % heads) / heads_per_kv_head;
  a += batch_head * rows * inner;
  b += kv_batch_head * inner * columns;
  c += batch_head * rows * columns;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kTile + ty;
  const std::int64_t column = static_cast<std::int64_t>(blockIdx.x) * kTile + tx;
  float sum = 0.0f;
  for (std::int64_t k0 = 0; k0 < inner; k0 += kTile) {
    a_tile[ty][tx] = row < rows && k0 + tx < inner ? to_float(a[row * inner + k0 + tx]) : 0.0f;
    if constexpr (kBTransposed) {
      // Thread (ty, tx) reads B^T's row (first column of the tile + ty), element k0 + tx: consecutive
      // threads read consecutive addresses.
      const std::int64_t b_column = static_cast<std::int64_t>(blockIdx.x) * kTile + ty;
      b_tile[tx][ty] = b_column < columns && k0 + tx < inner ? to_float(b[b_column * inner + k0 + tx]) : 0.0f;
    } else {
      b_tile[ty][tx] = k0 + ty < inner && column < columns ? to_float(b[(k0 + ty) * columns + column]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) sum += a_tile[ty][k] * b_tile[k][tx];
    __syncthreads();
  }
  if (row < rows && column < columns) c[row * columns + column] = from_float<TC>(alpha * sum);
}

// batch * heads * seq^2 * 4 bytes, or SIZE_MAX when that overflows.
std::size_t scores_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  std::size_t bytes = sizeof(float);
  for (const std::int64_t factor : {batch, heads, seq, seq}) {
    const auto f = static_cast<std::size_t>(factor > 0 ? factor : 0);
    if (f != 0 && bytes > kMax / f) return kMax;
    bytes *= f;
  }
  return bytes;
}

}  // namespace

std::size_t naive_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq) {
  return scores_bytes(batch, heads, seq);
}

std::string naive_limits(const AttentionShape& shape) {
  if (shape.batch * shape.heads > kMaxGridY)
    return "batch * heads above 65535 (a (batch, head) per grid z index of the matmuls)";
  if (ceil_div<std::int64_t>(shape.seq, kTile) > kMaxGridY) return "seq above 65535 * 16 (the matmuls' grid y)";
  if (const std::string why = attention_softmax_limits(shape.batch * shape.heads * shape.seq); !why.empty()) return why;
  if (scores_bytes(shape.batch, shape.heads, shape.seq) == std::numeric_limits<std::size_t>::max())
    return "the scores' workspace, batch * heads * seq^2 floats, overflows 64 bits";
  return "";
}

template <typename T>
void naive(const AttentionArgs<T>& args, cudaStream_t stream) {
  if (!ready_to_launch("attention naive", naive_limits(shape_of(args, 0)), args,
                       naive_workspace_bytes(args.batch, args.heads, args.seq)))
    return;
  auto* scores = static_cast<float*>(args.workspace);
  const std::int64_t batch_heads = args.batch * args.heads;
  const std::int64_t group = args.heads / args.kv_heads;
  const auto row_tiles = static_cast<unsigned>(ceil_div<std::int64_t>(args.seq, kTile));
  const dim3 threads(kTile, kTile);

  const dim3 score_grid(row_tiles, row_tiles, static_cast<unsigned>(batch_heads));
  attention_naive_matmul_kernel<true><<<score_grid, threads, 0, stream>>>(args.q, args.k, scores, args.seq, args.seq,
                                                                          args.head_dim, args.heads, group, args.scale);
  CUDALAB_CHECK_LAUNCH();

  attention_softmax(static_cast<const float*>(scores), scores, args.lse, batch_heads * args.seq, args.seq,
                    key_window(args), stream);

  const dim3 output_grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.head_dim, kTile)), row_tiles,
                         static_cast<unsigned>(batch_heads));
  attention_naive_matmul_kernel<false><<<output_grid, threads, 0, stream>>>(
      static_cast<const float*>(scores), args.v, args.o, args.seq, args.head_dim, args.seq, args.heads, group, 1.0f);
  CUDALAB_CHECK_LAUNCH();
}

template void naive<float>(const AttentionArgs<float>&, cudaStream_t);
template void naive<__half>(const AttentionArgs<__half>&, cudaStream_t);
template void naive<__nv_bfloat16>(const AttentionArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::attention_variants
