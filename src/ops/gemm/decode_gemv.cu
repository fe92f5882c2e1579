// decode_gemv: C = alpha A W^T + beta C for at most 8 rows of A (a decode step's tokens) against a
// weight W stored n x k (B transposed: nn.Linear's layout). Its 2 n k bytes of W outweigh its 2 m n k
// flops, so it runs on CUDA cores and its measure is the copy rate: a tile rung covers the n x m
// output with n / 128 tiles, too few to keep W's read in flight (an H200 at m = 1 against a 4096 x
// 4096 weight: 22 us, 1.5 TB/s, where cuBLAS took 15 us).
//
// decode_gemv: a block of 256 threads takes kColumns output columns. Each thread walks k in 16-byte
// chunks: the columns' chunks of W (read once, coalesced along k) and each row's chunk of A (m x k,
// read by every block, so from L1 and L2), keeping kColumns x kRows fp32 sums; warp shuffles, then
// shared memory, reduce them over the block, and one thread per output blends it into C. On an H200
// its time grew with m (4096², m = 1: 13.4 us, m = 8: 30.1): at k = 4096 each thread walks two
// chunks, so the block's reduction of 4 m sums and its two barriers are much of its work. A warp
// per 4 columns walking all of k (shuffles only, no barrier) was slower still on the same H200:
// 16.0 against 13.2 us at m = 1 and 71.0 against 30.1 at m = 8 (4096²), 0.42-0.96x this kernel
// wherever measured (results/nvidia-h200/gemm-decode-rungs.json), and is gone.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/row_reduce.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kColumns = 4;
constexpr int kMaxRows = 8;

// Chunk c (16 bytes along k) of kCols columns of W from column0 (a column past n repeats the last,
// never stored) and of each of A's rows, into acc[column][row].
template <int kRows, int kCols, typename T>
__device__ __forceinline__ void accumulate_chunk(const GemmArgs<T>& p, const T* a, const T* w, std::int64_t column0,
                                                 std::int64_t c, float (&acc)[kCols][kRows]) {
  constexpr int kChunk = kVector16<T>;
  float w_chunk[kCols][kChunk];
#pragma unroll
  for (int q = 0; q < kCols; ++q) {
    const std::int64_t column = column0 + q < p.n ? column0 + q : p.n - 1;
    load_floats<kChunk>(w + column * p.ldb + c * kChunk, w_chunk[q]);
  }
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    if (i >= p.m) break;
    float a_chunk[kChunk];
    load_floats<kChunk>(a + i * p.lda + c * kChunk, a_chunk);
#pragma unroll
    for (int q = 0; q < kCols; ++q)
#pragma unroll
      for (int e = 0; e < kChunk; ++e) acc[q][i] = fmaf(a_chunk[e], w_chunk[q][e], acc[q][i]);
  }
}

template <typename T, int kRows>
__global__ void __launch_bounds__(kThreads) decode_gemv_kernel(const GemmArgs<T> p) {
  constexpr int kChunk = kVector16<T>;  // elements in 16 bytes
  constexpr int kOutputs = kColumns * kRows;
  __shared__ float partial[kWarps][kOutputs];
  const int thread = static_cast<int>(threadIdx.x);
  const std::int64_t column0 = static_cast<std::int64_t>(blockIdx.x) * kColumns;
  const std::int64_t chunks = p.k / kChunk;
  for (std::int64_t z = blockIdx.y; z < p.batch; z += gridDim.y) {
    const T* a = p.a + z * p.stride_a;
    const T* w = p.b + z * p.stride_b;
    float acc[kColumns][kRows] = {};
    for (std::int64_t c = thread; c < chunks; c += kThreads) {
      accumulate_chunk<kRows>(p, a, w, column0, c, acc);
    }
    const int lane = thread % 32, warp = thread / 32;
#pragma unroll
    for (int q = 0; q < kColumns; ++q)
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        const float sum = group_reduce<32>(acc[q][i], SumOf{});
        if (lane == 0) partial[warp][q * kRows + i] = sum;
      }
    __syncthreads();
    if (thread < kOutputs) {
      const int q = thread / kRows, i = thread % kRows;
      float sum = 0.0f;
#pragma unroll
      for (int v = 0; v < kWarps; ++v) sum += partial[v][thread];
      if (i < p.m && column0 + q < p.n)
        blend_store(p.c + z * p.stride_c + i * p.ldc + column0 + q, p.alpha, p.beta, sum);
    }
    __syncthreads();  // partial is rewritten by the next matrix of the batch
  }
}

template <typename T, int kRows>
void launch(const GemmArgs<T>& args, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.n, kColumns)),
                  static_cast<unsigned>(std::min<std::int64_t>(args.batch, 65535)));
  decode_gemv_kernel<T, kRows><<<grid, kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

std::string decode_gemv_limits(const GemmShape& shape, int compute_capability) {
  return decode_limits(shape, compute_capability, kMaxRows, kColumns);
}

template <typename T>
void decode_gemv(const GemmArgs<T>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  require_limits("decode_gemv", decode_gemv_limits(shape_of(args), current_gpu().compute_capability));
  CUDALAB_REQUIRE(args.k == 0 || (is_aligned16(args.a) && is_aligned16(args.b)),
                  "decode_gemv: A and B must be 16-byte aligned (16-byte loads)");
  if (args.m == 1) return launch<T, 1>(args, stream);
  if (args.m == 2) return launch<T, 2>(args, stream);
  if (args.m <= 4) return launch<T, 4>(args, stream);
  launch<T, 8>(args, stream);
}

template void decode_gemv<__half>(const GemmArgs<__half>&, cudaStream_t);
template void decode_gemv<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
