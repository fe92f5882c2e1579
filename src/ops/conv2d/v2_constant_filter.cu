#include "ops/conv2d/constant_filter.cuh"

namespace cudalab::conv2d_variants {
namespace {

// global_filter's loop; only where the taps come from differs.
__global__ void conv2d_constant_filter_kernel(Conv2dArgs<float> args) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t y = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (x >= args.width || y >= args.height) return;
  args.output[y * args.output_pitch + x] =
      direct_window_sum(args, x, y, [&](int k) { return constant_filter_taps[k]; });
}

}  // namespace

void constant_filter_prepare(const Conv2dArgs<float>& args, cudaStream_t stream) {
  upload_constant_filter(args, stream);
}

void constant_filter(const Conv2dArgs<float>& args, cudaStream_t stream) {
  const dim3 block(kWarpSize, 8);
  conv2d_constant_filter_kernel<<<pixel_grid(args, block), block, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::conv2d_variants
