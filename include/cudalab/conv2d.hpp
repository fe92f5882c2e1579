// 2-D convolution of one fp32 channel with a small square filter, zero padding, output the size
// of the input. It is a cross-correlation, as cuDNN (CUDNN_CROSS_CORRELATION) and deep-learning
// frameworks compute a "convolution":
//   output[y][x] = sum over i, j in [0, R) of input[y + i - R/2][x + j - R/2] * filter[i][j],
// pixels outside the image reading as 0. Each output is an fp32 sum of R*R products (within
// R*R * 2^-23 of the sum of the products' magnitudes).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab {

// Filter widths conv2d takes: odd, 1 to 7.
inline constexpr int kMaxConv2dFilterWidth = 7;
// The most image rows conv2d takes: its grid's y dimension (at most 65535) holds tiles of 32 rows.
inline constexpr std::int64_t kMaxConv2dHeight = std::int64_t{65535} * 32;

// Convolves the height x width image at `input` (device memory, rows input_pitch elements apart)
// with the filter_width x filter_width filter at `filter` (device memory, row-major) into
// `output` (device memory, rows output_pitch elements apart), on `stream`, asynchronously.
// Only the first `width` elements of each output row are written. A height or width of 0 does
// nothing. Any alignment works; rows that start 16-byte aligned (pitch a multiple of 4 and an
// aligned base) take the vector loads and stores. The filter is read on the stream like the image
// (no __constant__ symbol), so calls on different streams may run concurrently. Needs no
// workspace. Throws cudalab::Error: invalid_argument for negative sizes, a pitch below the width,
// a filter width that is even or outside 1..7, a null pointer with a non-empty image, more than
// kMaxConv2dHeight rows, or an output that overlaps the input or the filter; cuda when the launch fails.
void conv2d(const float* input, std::int64_t height, std::int64_t width, std::int64_t input_pitch, const float* filter,
            int filter_width, float* output, std::int64_t output_pitch, cudaStream_t stream = nullptr);

// The same with dense rows (both pitches equal to the width).
void conv2d(const float* input, std::int64_t height, std::int64_t width, const float* filter, int filter_width,
            float* output, cudaStream_t stream = nullptr);

}  // namespace cudalab
