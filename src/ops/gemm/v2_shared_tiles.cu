// Steps 3-4 and the tile-size sweep: the tutorial's shared-memory tiles. A block stages a TILE x
// TILE tile of A and of B, then every thread reads its dot product's slice from shared memory:
// each global element is loaded once per block instead of once per thread. Partial tiles load
// zeros, so any M, N, K works.
#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/variants.hpp"

namespace cudalab::gemm_variants {
namespace {

// A block has at most 1024 threads, so a 64x64 tile gives each thread kRows rows (ty, ty + 16, ...).
template <int kTile>
constexpr int rows_per_thread() {
  return kTile * kTile > 1024 ? kTile * kTile / 1024 : 1;
}

template <int kTile, int kPad>
__global__ void __launch_bounds__(kTile* kTile / rows_per_thread<kTile>()) shared_tile_kernel(GemmArgs<float> p) {
  constexpr int kRows = rows_per_thread<kTile>();
  constexpr int kRowStep = kTile / kRows;
  __shared__ float a_tile[kTile][kTile + kPad];
  __shared__ float b_tile[kTile][kTile + kPad];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t block_row = static_cast<std::int64_t>(blockIdx.y) * kTile;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kTile + tx;
  float acc[kRows] = {};
  for (std::int64_t k0 = 0; k0 < p.k; k0 += kTile) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int y = ty + r * kRowStep;
      const std::int64_t a_row = block_row + y, a_col = k0 + tx, b_row = k0 + y;
      a_tile[y][tx] = a_row < p.m && a_col < p.k ? p.a[a_row * p.lda + a_col] : 0.0f;
      b_tile[y][tx] = b_row < p.k && col < p.n ? p.b[b_row * p.ldb + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile; ++i)
#pragma unroll
      for (int r = 0; r < kRows; ++r) acc[r] = fmaf(a_tile[ty + r * kRowStep][i], b_tile[i][tx], acc[r]);
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t row = block_row + ty + r * kRowStep;
    if (row < p.m && col < p.n) blend_store(&p.c[row * p.ldc + col], p.alpha, p.beta, acc[r]);
  }
}

template <int kTile, int kPad>
void launch(const GemmArgs<float>& args, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.n, kTile)),
                  static_cast<unsigned>(ceil_div<std::int64_t>(args.m, kTile)));
  shared_tile_kernel<kTile, kPad><<<grid, dim3(kTile, kTile / rows_per_thread<kTile>()), 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <int kTile, bool kPadded>
void shared_tile(const GemmArgs<float>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0) return;
  launch<kTile, kPadded ? 1 : 0>(args, stream);
}

template void shared_tile<8, false>(const GemmArgs<float>&, cudaStream_t);
template void shared_tile<16, false>(const GemmArgs<float>&, cudaStream_t);
template void shared_tile<32, false>(const GemmArgs<float>&, cudaStream_t);
template void shared_tile<32, true>(const GemmArgs<float>&, cudaStream_t);
template void shared_tile<64, false>(const GemmArgs<float>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
