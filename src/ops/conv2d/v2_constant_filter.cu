#include "ops/conv2d/constant_filter.cuh"

namespace cudalab::conv2d_variants {
namespace {

// The same loop as global_filter; only where the taps come from differs.
__global__ void conv2d_constant_filter_kernel(Conv2dArgs args) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t y = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (x >= args.width || y >= args.height) return;
  const int half = args.filter_width / 2;
  float sum = 0.0f;
  for (int i = 0; i < args.filter_width; ++i) {
    const std::int64_t row = y + i - half;
    if (row < 0 || row >= args.height) continue;
    for (int j = 0; j < args.filter_width; ++j) {
      const std::int64_t column = x + j - half;
      if (column < 0 || column >= args.width) continue;
      sum += args.input[row * args.input_pitch + column] * constant_filter_taps[i * args.filter_width + j];
    }
  }
  args.output[y * args.output_pitch + x] = sum;
}

}  // namespace

void constant_filter(const Conv2dArgs& args, cudaStream_t stream) {
  upload_constant_filter(args, stream);
  const dim3 block(32, 8);
  conv2d_constant_filter_kernel<<<pixel_grid(args, block), block, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::conv2d_variants
