#include "ops/conv2d/constant_filter.cuh"

namespace cudalab::conv2d_variants {
namespace {

constexpr int kTile = 16;  // outputs per block side, as the tutorial's 16x16 blocks

// Shared memory: (kTile + R - 1)^2 floats, the block's input with its halo.
__global__ void conv2d_shared_tile_kernel(Conv2dArgs<float> args) {
  extern __shared__ float tile[];
  const int half = args.filter_width / 2;
  const int tile_width = kTile + args.filter_width - 1;
  const std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * kTile;
  // Every thread loads a strided share of the tile; pixels outside the image are the padding.
  for (int index = threadIdx.y * kTile + threadIdx.x; index < tile_width * tile_width; index += kTile * kTile) {
    const std::int64_t row = y0 + index / tile_width - half;
    const std::int64_t column = x0 + index % tile_width - half;
    const bool inside = row >= 0 && row < args.height && column >= 0 && column < args.width;
    tile[index] = inside ? args.input[row * args.input_pitch + column] : 0.0f;
  }
  __syncthreads();
  const std::int64_t x = x0 + threadIdx.x;
  const std::int64_t y = y0 + threadIdx.y;
  if (x >= args.width || y >= args.height) return;
  float sum = 0.0f;
  for (int i = 0; i < args.filter_width; ++i)
    for (int j = 0; j < args.filter_width; ++j)
      sum += tile[(threadIdx.y + i) * tile_width + threadIdx.x + j] * constant_filter_taps[i * args.filter_width + j];
  args.output[y * args.output_pitch + x] = sum;
}

}  // namespace

void shared_tile_prepare(const Conv2dArgs<float>& args, cudaStream_t stream) { upload_constant_filter(args, stream); }

void shared_tile(const Conv2dArgs<float>& args, cudaStream_t stream) {
  const dim3 block(kTile, kTile);
  const int tile_width = kTile + args.filter_width - 1;
  const std::size_t shared_bytes = sizeof(float) * tile_width * tile_width;
  conv2d_shared_tile_kernel<<<pixel_grid(args, block), block, shared_bytes, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::conv2d_variants
