// Steps 5-6: register blocking. With one output per thread every FMA needs two shared-memory
// loads; a thread that owns a column of 8 outputs (1-D) reuses each B value 8 times, and one that
// owns an 8x8 block (2-D) reuses each A and B value 8 times, so the loop becomes FMA bound.
#include "core/launch.cuh"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/variants.hpp"

namespace cudalab::gemm_variants {
namespace {

// Loads a kRows x kCols tile at (row0, col0) of a row-major matrix into shared memory, zeros
// outside the matrix; consecutive threads take consecutive elements of a row (coalesced).
template <int kRows, int kCols, int kThreads>
__device__ __forceinline__ void load_tile(float* tile, const float* matrix, std::int64_t ld, std::int64_t rows,
                                          std::int64_t cols, std::int64_t row0, std::int64_t col0) {
#pragma unroll
  for (int e = threadIdx.x; e < kRows * kCols; e += kThreads) {
    const std::int64_t r = row0 + e / kCols, c = col0 + e % kCols;
    tile[e] = r < rows && c < cols ? matrix[r * ld + c] : 0.0f;
  }
}

constexpr int k1dBm = 64, k1dBn = 64, k1dBk = 8, k1dTm = 8;
constexpr int k1dThreads = k1dBm * k1dBn / k1dTm;

__global__ void __launch_bounds__(k1dThreads) blocktile_1d_kernel(GemmArgs<float> p) {
  __shared__ float a_tile[k1dBm * k1dBk];  // [m][k]
  __shared__ float b_tile[k1dBk * k1dBn];  // [k][n]
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * k1dBm;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * k1dBn;
  const int col = threadIdx.x % k1dBn, row = (threadIdx.x / k1dBn) * k1dTm;
  float acc[k1dTm] = {};
  for (std::int64_t k0 = 0; k0 < p.k; k0 += k1dBk) {
    load_tile<k1dBm, k1dBk, k1dThreads>(a_tile, p.a, p.lda, p.m, p.k, row0, k0);
    load_tile<k1dBk, k1dBn, k1dThreads>(b_tile, p.b, p.ldb, p.k, p.n, k0, col0);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < k1dBk; ++i) {
      const float b = b_tile[i * k1dBn + col];
#pragma unroll
      for (int r = 0; r < k1dTm; ++r) acc[r] = fmaf(a_tile[(row + r) * k1dBk + i], b, acc[r]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < k1dTm; ++r) {
    const std::int64_t m = row0 + row + r, n = col0 + col;
    if (m < p.m && n < p.n) blend_store(&p.c[m * p.ldc + n], p.alpha, p.beta, acc[r]);
  }
}

constexpr int k2dBm = 128, k2dBn = 128, k2dBk = 8, k2dTm = 8, k2dTn = 8;
constexpr int k2dThreads = k2dBm * k2dBn / (k2dTm * k2dTn);

__global__ void __launch_bounds__(k2dThreads) blocktile_2d_kernel(GemmArgs<float> p) {
  __shared__ float a_tile[k2dBm * k2dBk];  // [m][k]
  __shared__ float b_tile[k2dBk * k2dBn];  // [k][n]
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * k2dBm;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * k2dBn;
  const int row = (threadIdx.x / (k2dBn / k2dTn)) * k2dTm, col = (threadIdx.x % (k2dBn / k2dTn)) * k2dTn;
  float acc[k2dTm][k2dTn] = {};
  float a_frag[k2dTm], b_frag[k2dTn];
  for (std::int64_t k0 = 0; k0 < p.k; k0 += k2dBk) {
    load_tile<k2dBm, k2dBk, k2dThreads>(a_tile, p.a, p.lda, p.m, p.k, row0, k0);
    load_tile<k2dBk, k2dBn, k2dThreads>(b_tile, p.b, p.ldb, p.k, p.n, k0, col0);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < k2dBk; ++i) {
#pragma unroll
      for (int r = 0; r < k2dTm; ++r) a_frag[r] = a_tile[(row + r) * k2dBk + i];
#pragma unroll
      for (int c = 0; c < k2dTn; ++c) b_frag[c] = b_tile[i * k2dBn + col + c];
#pragma unroll
      for (int r = 0; r < k2dTm; ++r)
#pragma unroll
        for (int c = 0; c < k2dTn; ++c) acc[r][c] = fmaf(a_frag[r], b_frag[c], acc[r][c]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < k2dTm; ++r)
#pragma unroll
    for (int c = 0; c < k2dTn; ++c) {
      const std::int64_t m = row0 + row + r, n = col0 + col + c;
      if (m < p.m && n < p.n) blend_store(&p.c[m * p.ldc + n], p.alpha, p.beta, acc[r][c]);
    }
}

dim3 tile_grid(const GemmArgs<float>& args, int bm, int bn) {
  return dim3(static_cast<unsigned>(ceil_div<std::int64_t>(args.n, bn)),
              static_cast<unsigned>(ceil_div<std::int64_t>(args.m, bm)));
}

}  // namespace

void blocktile_1d(const GemmArgs<float>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0) return;
  blocktile_1d_kernel<<<tile_grid(args, k1dBm, k1dBn), k1dThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

void blocktile_2d(const GemmArgs<float>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0) return;
  blocktile_2d_kernel<<<tile_grid(args, k2dBm, k2dBn), k2dThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::gemm_variants
