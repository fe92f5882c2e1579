// The cuDNN baseline of both softmax ops: cudnnSoftmaxForward and cudnnSoftmaxBackward
// (CUDNN_SOFTMAX_ACCURATE, which subtracts the max; CUDNN_SOFTMAX_MODE_INSTANCE over a
// rows x features x 1 x 1 NCHW tensor, so one softmax per row). cuDNN is loaded with dlopen at run
// time, never linked, as the conv2d baseline loads it: libcudnn.so.9 on the loader's path, then
// $CUDALAB_CUDNN_DIR/libcudnn.so.9. Where it is absent the variant says so and is skipped.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "ops/softmax/variants.hpp"

namespace cudalab::softmax_variants {

// Empty when cuDNN loaded; otherwise what was tried.
std::string cudnn_unavailable_reason();

// Empty when cuDNN's int dimensions and strides can describe rows x features; otherwise why not.
std::string cudnn_shape_unsupported(std::int64_t rows, std::int64_t features);

// A handle per device and a tensor descriptor per shape and dtype, made at the first call and kept,
// so a timed launch is the cuDNN call alone. Throw cudalab::Error (library) when cuDNN is missing or
// refuses.
template <typename T>
void cudnn_softmax(const SoftmaxArgs<T>& args, cudaStream_t stream);
template <typename T>
void cudnn_softmax_backward(const SoftmaxBackwardArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::softmax_variants
