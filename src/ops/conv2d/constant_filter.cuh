// The __constant__ filter of the ladder's middle steps (constant_filter, shared_tile, texture).
#pragma once

#include "ops/conv2d/common.cuh"

namespace cudalab::conv2d_variants {

namespace {
// Without separable compilation each translation unit that includes this header has its own
// copy of the symbol, filled by its own variant's *_prepare (through upload_constant_filter)
// before its launches. Shared by calls on every stream: concurrent calls with different filters would race,
// which is why the library's kernel takes the filter from global memory instead.
__constant__ float constant_filter_taps[kMaxFilterWidth * kMaxFilterWidth];

void upload_constant_filter(const Conv2dArgs<float>& args, cudaStream_t stream) {
  CUDALAB_CUDA_CHECK(cudaMemcpyToSymbolAsync(constant_filter_taps, args.filter,
                                             sizeof(float) * args.filter_width * args.filter_width, 0,
                                             cudaMemcpyDeviceToDevice, stream));
}
}  // namespace

}  // namespace cudalab::conv2d_variants
