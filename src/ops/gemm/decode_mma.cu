// decode_mma: C = alpha A W^T + beta C for at most 16 rows of A (a decode batch's tokens) against a
// weight W stored n x k, on tensor cores. The product is a read of W (2 n k bytes against 2 m n k
// flops), and decode_gemv's CUDA-core dot products slow down as m grows: each 16-byte chunk of W
// there costs m chunks of A read back from L1 and 8 m FMAs. Here W is the mma's A operand (16 of
// its rows per block, the mma's m) and the tokens its B operand (n = 8 tokens a group): a 16-byte
// chunk of W feeds two m16n8k16 steps per token group.
//
// The fragments come straight from global memory, no ldmatrix: a dot product does not care which
// k a fragment slot holds as long as W's and A's slots agree. Lane (g, t) (g = lane / 4, t = lane %
// 4) loads 16 bytes of W rows g and g + 8 and of token g's row at the same k, and hands words 0 and
// 1 (2h and 2h + 1 for the second step) of each as the slots the PTX layout calls k 2t and 2t + 8.
// The four lanes of a row read its 64 bytes at a time, twice per step: whole 128-byte lines.
//
// A block of 8 warps takes 16 rows of W and all of k; warp w takes k steps w, w + 8, ... (64
// elements each), the next step's loads issued before the current step's mma. W is read once
// (L1::no_allocate), A by every block (it stays in L1 and L2). Shared memory sums the 8 warps'
// 16 x (8 x groups) accumulators; one thread per output blends it into C.
//
// On an H100 (bf16, results/nvidia-h100-80gb-hbm3/gemm-decode-mma.json) it reads a 4096 x 4096
// weight at 1.92-1.99 TB/s for m = 1-16 (cuBLAS 1.78-1.84, decode_gemv 1.07 at m = 8) and an 8192 x
// 8192 one at 2.44-2.50 (cuBLAS 2.68-2.69). Four token groups (m = 32) fell to 1.27 and 1.64 TB/s:
// each block reads all of A (512 KB at 8192) from L2, twice the weight's bytes; it stops at 16.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRows = 16;        // rows of W (output columns) per block: the mma's m
constexpr int kStepK = 64;       // elements of k per warp step: two 16-byte chunks of each row per lane
constexpr int kGroupTokens = 8;  // tokens per mma (its n)
constexpr int kMaxGroups = 2;

// 16 bytes of W, read once: kept out of L1 so that A stays there.
__device__ __forceinline__ uint4 load_streaming(const void* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}
// 16 bytes of A, read by every block: through L1.
__device__ __forceinline__ uint4 load_shared_by_blocks(const void* p) {
  uint4 r;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  return r;
}
__device__ __forceinline__ std::uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// One lane's chunks of one k step: W rows g and g + 8 (low, high) and token g of each group, two
// 16-byte chunks each (c = 0, 1: k step * 64 + 32 c + 8 t); chunks past k, and tokens past m, are zero.
template <int kGroups>
struct Step {
  uint4 low[2], high[2], tokens[kGroups][2];
};

template <typename T, int kGroups>
__device__ __forceinline__ Step<kGroups> fetch(const T* w_low, const T* w_high, const T* const (&a_rows)[kGroups],
                                               std::int64_t step, std::int64_t chunks, int t) {
  Step<kGroups> s;
  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const std::int64_t chunk = step * (kStepK / 8) + 4 * c + t;
    const bool inside = chunk < chunks;
    s.low[c] = inside ? load_streaming(w_low + chunk * 8) : zero;
    s.high[c] = inside ? load_streaming(w_high + chunk * 8) : zero;
#pragma unroll
    for (int j = 0; j < kGroups; ++j)
      s.tokens[j][c] = inside && a_rows[j] != nullptr ? load_shared_by_blocks(a_rows[j] + chunk * 8) : zero;
  }
  return s;
}

template <typename T, int kGroups>
__device__ __forceinline__ void multiply(const Step<kGroups>& s, float (&acc)[kGroups][4]) {
#pragma unroll
  for (int c = 0; c < 2; ++c)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::uint32_t a[4] = {word(s.low[c], 2 * h), word(s.high[c], 2 * h), word(s.low[c], 2 * h + 1),
                                  word(s.high[c], 2 * h + 1)};
#pragma unroll
      for (int j = 0; j < kGroups; ++j) {
        const std::uint32_t b[2] = {word(s.tokens[j][c], 2 * h), word(s.tokens[j][c], 2 * h + 1)};
        mma_m16n8k16<T>(acc[j], a, b);
      }
    }
}

template <typename T, int kGroups>
__global__ void __launch_bounds__(kThreads) decode_mma_kernel(const GemmArgs<T> p) {
  constexpr int kTokens = kGroups * kGroupTokens;
  __shared__ float partial[kWarps][kTokens][kRows + 1];  // + 1: the lanes of a warp's stores spread over banks
  const int thread = static_cast<int>(threadIdx.x);
  const int lane = thread % 32, warp = thread / 32, g = lane / 4, t = lane % 4;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRows;
  const std::int64_t chunks = p.k / 8;
  const std::int64_t steps = (p.k + kStepK - 1) / kStepK;
  for (std::int64_t z = blockIdx.y; z < p.batch; z += gridDim.y) {
    // Rows past n repeat the last (read, never stored).
    const T* w = p.b + z * p.stride_b;
    const T* w_low = w + std::min(row0 + g, p.n - 1) * p.ldb;
    const T* w_high = w + std::min(row0 + g + 8, p.n - 1) * p.ldb;
    const T* a_rows[kGroups];
#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      const std::int64_t token = j * kGroupTokens + g;
      a_rows[j] = token < p.m ? p.a + z * p.stride_a + token * p.lda : nullptr;
    }
    float acc[kGroups][4] = {};
    Step<kGroups> current = fetch<T, kGroups>(w_low, w_high, a_rows, warp, chunks, t);
    for (std::int64_t step = warp; step < steps; step += kWarps) {
      const Step<kGroups> next = fetch<T, kGroups>(w_low, w_high, a_rows, step + kWarps, chunks, t);
      multiply<T, kGroups>(current, acc);
      current = next;
    }
    // acc[j]: rows g and g + 8 of the block's 16, tokens 8 j + 2 t and 8 j + 2 t + 1.
#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      const int token = j * kGroupTokens + 2 * t;
      partial[warp][token][g] = acc[j][0];
      partial[warp][token + 1][g] = acc[j][1];
      partial[warp][token][g + 8] = acc[j][2];
      partial[warp][token + 1][g + 8] = acc[j][3];
    }
    __syncthreads();
    for (int output = thread; output < kTokens * kRows; output += kThreads) {
      const int token = output / kRows, row = output % kRows;
      float sum = 0.0f;
#pragma unroll
      for (int v = 0; v < kWarps; ++v) sum += partial[v][token][row];
      if (token < p.m && row0 + row < p.n)
        blend_store(p.c + z * p.stride_c + token * p.ldc + row0 + row, p.alpha, p.beta, sum);
    }
    __syncthreads();  // partial is rewritten by the next matrix of the batch
  }
}

template <typename T, int kGroups>
void launch(const GemmArgs<T>& args, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.n, kRows)),
                  static_cast<unsigned>(std::min<std::int64_t>(args.batch, 65535)));
  decode_mma_kernel<T, kGroups><<<grid, kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

std::string decode_mma_limits(const GemmShape& shape, int compute_capability) {
  return decode_limits(shape, compute_capability, kMaxGroups * kGroupTokens, kRows);
}

template <typename T>
void decode_mma(const GemmArgs<T>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  require_limits("decode_mma", decode_mma_limits(shape_of(args), current_gpu().compute_capability));
  CUDALAB_REQUIRE(args.k == 0 || (is_aligned16(args.a) && is_aligned16(args.b)),
                  "decode_mma: A and B must be 16-byte aligned (16-byte loads)");
  if (args.m <= kGroupTokens) return launch<T, 1>(args, stream);
  launch<T, kMaxGroups>(args, stream);
}

template void decode_mma<__half>(const GemmArgs<__half>&, cudaStream_t);
template void decode_mma<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
