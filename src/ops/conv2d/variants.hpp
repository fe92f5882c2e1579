// The 2-D convolution ladder: single-channel fp32 images, a square filter of odd width R (1 to 7),
// zero padding and an output the size of the input ("same"), cross-correlation as cuDNN's
// CUDNN_CROSS_CORRELATION computes it:
//   out[y][x] = sum over i, j in [0, R) of in[y + i - R/2][x + j - R/2] * filter[i][j],
// with pixels outside the image read as 0. Every launcher takes the op's argument struct and runs
// on `stream`; the kernels are fp32 only. The library entry (conv2d.cpp) and the registry
// (register.cu) fill the same struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

namespace cudalab::conv2d_variants {

inline constexpr int kMaxFilterWidth = 7;

// Rows are `*_pitch` elements apart (pitch >= width), so a padded, texture-aligned image and a
// dense one go through the same kernels. The filter is R x R, row-major, in device memory.
// Kernels take the struct by value, so it stays trivially copyable.
template <typename T>
struct Conv2dArgs {
  using Element = T;
  const T* input = nullptr;
  std::int64_t input_pitch = 0;
  const T* filter = nullptr;
  int filter_width = 0;
  T* output = nullptr;
  std::int64_t output_pitch = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  // The cuDNN baseline's workspace (cudnn_workspace_bytes, cudnn_baseline.hpp); the ladder needs
  // none.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// One output per thread, the filter read from global memory at every tap, bounds checked per tap.
// Fixes nothing: the textbook kernel. Costs: R*R filter loads per output next to the R*R input
// loads (both mostly L1 hits), and a branch per tap.
void global_filter(const Conv2dArgs<float>& args, cudaStream_t stream);

// The filter in __constant__ memory: every thread of a warp reads the same tap, which the
// constant cache broadcasts, and FFMA takes it as an operand. Fixes: the filter's loads. Costs:
// the input is still read R*R times per output through L1, and the filter must first be copied
// into the symbol: each constant-memory variant has a *_prepare that does it (one small
// device-to-device copy on the stream), run untimed before each launch, as a program would once
// per filter.
void constant_filter_prepare(const Conv2dArgs<float>& args, cudaStream_t stream);
void constant_filter(const Conv2dArgs<float>& args, cudaStream_t stream);

// A 16x16 output tile per block, its input (with an R/2 halo on every side) staged once in shared
// memory, filter in constant memory. Fixes: R*R global (L1) loads per output become one global
// load per input pixel (plus the halo). Costs: a barrier per block, shared-memory loads in the
// inner loop, and halo pixels read by two or four blocks.
void shared_tile_prepare(const Conv2dArgs<float>& args, cudaStream_t stream);
void shared_tile(const Conv2dArgs<float>& args, cudaStream_t stream);

// One output per thread through a texture object (cudaTextureObject_t: the tutorial's texture
// references are gone since CUDA 12) with border addressing, whose zero outside the image is the
// padding: no bounds checks in the loop. Filter in constant memory. Fixes: the branches, and
// 2-D locality goes to the texture cache. Costs: a texture object over a pitched image (the pitch
// a multiple of the device's texture pitch alignment). The launcher makes it at its first call
// on an image (address, size, pitch) and reuses it on later calls, so a timed launch does not
// pay for it; it keeps the last few, and destroying the oldest waits for the device to go idle.
void texture_prepare(const Conv2dArgs<float>& args, cudaStream_t stream);
void texture(const Conv2dArgs<float>& args, cudaStream_t stream);
// Empty when a texture over this image can be made; otherwise why not.
std::string texture_unsupported(const Conv2dArgs<float>& args);

// Register tiling: a block of 32x8 threads stages a (rows_per_thread*8 + R-1) x (128 + 8) input
// tile in shared memory with 16-byte loads; each thread computes 4 adjacent outputs in each of
// `rows_per_thread` rows, reading every input row of its window once as three 16-byte shared loads
// and applying it to all the output rows it touches; the filter is held in registers (R is a
// template argument, so every loop unrolls) and outputs are stored as float4. Fixes: the inner
// loop's shared loads (3 per input row instead of R per output), the per-element global loads
// and stores, and the halo overhead (taller tiles). Costs: registers (16 or 32 accumulators and
// R*R filter values); needs 16-byte aligned rows for its vector paths (scalar fallback otherwise).
// The filter is read from global memory, not a __constant__ symbol, so concurrent calls on
// different streams with different filters do not race.
void register_tiled(const Conv2dArgs<float>& args, cudaStream_t stream);       // 4 rows per thread
void register_tiled_tall(const Conv2dArgs<float>& args, cudaStream_t stream);  // 8 rows per thread
// The most image rows register_tiled can take (its grid's y dimension is capped at 65535).
std::int64_t register_tiled_max_height();

}  // namespace cudalab::conv2d_variants
