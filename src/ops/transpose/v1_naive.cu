// The two untiled transposes: whichever side the threads walk along coalesces, the other side is
// strided by a whole row. Block 32x8; grid.y loops for more than 65535 block rows.
#include "core/launch.cuh"
#include "core/warp.cuh"
#include "ops/transpose/variants.hpp"

namespace cudalab::transpose_variants {
namespace {

constexpr int kBlockX = kWarpSize;
constexpr int kBlockY = 8;
constexpr std::int64_t kMaxGridY = 65535;

// threadIdx.x runs along input columns: in[r][c] read by consecutive threads, out[c][r] written
// a whole output row apart.
__global__ void transpose_naive_row_read_kernel(const float* __restrict__ in, float* __restrict__ out,
                                                std::int64_t rows, std::int64_t cols) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kBlockX + threadIdx.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * kBlockY + threadIdx.y; r < rows;
       r += static_cast<std::int64_t>(gridDim.y) * kBlockY)
    if (c < cols) out[c * rows + r] = in[r * cols + c];
}

// threadIdx.x runs along input rows (= output columns): out[c][r] written by consecutive threads.
__global__ void transpose_naive_column_read_kernel(const float* __restrict__ in, float* __restrict__ out,
                                                   std::int64_t rows, std::int64_t cols) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kBlockX + threadIdx.x;
  for (std::int64_t c = static_cast<std::int64_t>(blockIdx.y) * kBlockY + threadIdx.y; c < cols;
       c += static_cast<std::int64_t>(gridDim.y) * kBlockY)
    if (r < rows) out[c * rows + r] = in[r * cols + c];
}

dim3 naive_grid(std::int64_t along_x, std::int64_t along_y) {
  const std::int64_t y = ceil_div<std::int64_t>(along_y, kBlockY);
  return dim3(static_cast<unsigned>(ceil_div<std::int64_t>(along_x, kBlockX)),
              static_cast<unsigned>(y < kMaxGridY ? y : kMaxGridY));
}

}  // namespace

void naive_row_read(const TransposeArgs<float>& args, cudaStream_t stream) {
  transpose_naive_row_read_kernel<<<naive_grid(args.cols, args.rows), dim3(kBlockX, kBlockY), 0, stream>>>(
      args.in, args.out, args.rows, args.cols);
  CUDALAB_CUDA_CHECK(cudaGetLastError());
}

void naive_column_read(const TransposeArgs<float>& args, cudaStream_t stream) {
  transpose_naive_column_read_kernel<<<naive_grid(args.rows, args.cols), dim3(kBlockX, kBlockY), 0, stream>>>(
      args.in, args.out, args.rows, args.cols);
  CUDALAB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cudalab::transpose_variants
