#include "ops/conv2d/constant_filter.cuh"

namespace cudalab::conv2d_variants {
namespace {

__global__ void conv2d_texture_kernel(cudaTextureObject_t input, Conv2dArgs args) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t y = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (x >= args.width || y >= args.height) return;
  const int half = args.filter_width / 2;
  // Texel centres sit at +0.5; widths and heights up to 2^24 are exact in fp32 (the texture
  // limits are far below that).
  const float u = static_cast<float>(x - half) + 0.5f;
  const float v = static_cast<float>(y - half) + 0.5f;
  float sum = 0.0f;
  for (int i = 0; i < args.filter_width; ++i)
    for (int j = 0; j < args.filter_width; ++j)
      sum += tex2D<float>(input, u + j, v + i) * constant_filter_taps[i * args.filter_width + j];
  args.output[y * args.output_pitch + x] = sum;
}

}  // namespace

std::string texture_unsupported(const Conv2dArgs& args) {
  int device = 0, pitch_alignment = 0, max_width = 0, max_height = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&pitch_alignment, cudaDevAttrTexturePitchAlignment, device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&max_width, cudaDevAttrMaxTexture2DLinearWidth, device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&max_height, cudaDevAttrMaxTexture2DLinearHeight, device));
  const std::int64_t pitch_bytes = args.input_pitch * static_cast<std::int64_t>(sizeof(float));
  if (pitch_alignment > 0 && pitch_bytes % pitch_alignment != 0)
    return "a pitched texture needs rows " + std::to_string(pitch_alignment) + "-byte aligned";
  if (args.width > max_width || args.height > max_height)
    return "a 2-D linear texture holds at most " + std::to_string(max_width) + " x " + std::to_string(max_height) +
           " pixels";
  return "";
}

cudaTextureObject_t make_input_texture(const Conv2dArgs& args) {
  cudaResourceDesc resource = {};
  resource.resType = cudaResourceTypePitch2D;
  resource.res.pitch2D.devPtr = const_cast<float*>(args.input);
  resource.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  resource.res.pitch2D.width = static_cast<std::size_t>(args.width);
  resource.res.pitch2D.height = static_cast<std::size_t>(args.height);
  resource.res.pitch2D.pitchInBytes = static_cast<std::size_t>(args.input_pitch) * sizeof(float);
  cudaTextureDesc sampling = {};
  // Border mode returns 0 outside the image: the zero padding, with no bounds checks.
  sampling.addressMode[0] = cudaAddressModeBorder;
  sampling.addressMode[1] = cudaAddressModeBorder;
  sampling.filterMode = cudaFilterModePoint;
  sampling.readMode = cudaReadModeElementType;
  sampling.normalizedCoords = 0;
  cudaTextureObject_t texture = 0;
  CUDALAB_CUDA_CHECK(cudaCreateTextureObject(&texture, &resource, &sampling, nullptr));
  return texture;
}

void texture_prepare(const Conv2dArgs& args, cudaStream_t stream) { upload_constant_filter(args, stream); }

void texture(cudaTextureObject_t input, const Conv2dArgs& args, cudaStream_t stream) {
  const dim3 block(32, 8);
  conv2d_texture_kernel<<<pixel_grid(args, block), block, 0, stream>>>(input, args);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::conv2d_variants
