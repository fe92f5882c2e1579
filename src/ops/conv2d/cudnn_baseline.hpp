// The cuDNN baseline: cudnnConvolutionForward on the same single-channel image, filter and
// padding as the ladder. cuDNN is loaded with dlopen at run time, never linked, so cudalab builds
// and runs where it is absent (the variant then reports itself skipped): first libcudnn.so.9 on
// the loader's path, then $CUDALAB_CUDNN_DIR/libcudnn.so.9 (e.g. PyTorch's nvidia-cudnn wheel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "ops/conv2d/variants.hpp"

namespace cudalab::conv2d_variants {

// Empty when cuDNN loaded; otherwise what was tried.
std::string cudnn_unavailable_reason();

// Empty when cuDNN's descriptors can describe this image (int dimensions and strides);
// otherwise why not.
std::string cudnn_shape_unsupported(std::int64_t height, std::int64_t width, std::int64_t input_pitch,
                                    std::int64_t output_pitch);

// One entry of cudnnFindConvolutionForwardAlgorithm's answer.
struct CudnnAlgorithmTiming {
  std::string algorithm;    // "IMPLICIT_PRECOMP_GEMM", "FFT_TILING", ...
  double milliseconds = 0;  // cuDNN's own timing of one launch (warm, not L2-flushed)
  std::size_t workspace_bytes = 0;
};

// Descriptors for one image shape (N = C = K = 1, pitched rows), fp32 compute with FMA math only
// (no TF32 tensor cores: the ladder is plain fp32 too), zero padding R/2 and cross-correlation.
// The constructor runs cudnnFindConvolutionForwardAlgorithm once (untimed, on buffers cuDNN
// allocates itself) and keeps its fastest successful algorithm, so forward() is the convolution
// and nothing else. Throws cudalab::Error (library) when cuDNN is missing or fails.
class CudnnConvolution {
 public:
  CudnnConvolution(std::int64_t height, std::int64_t width, std::int64_t input_pitch, std::int64_t output_pitch,
                   int filter_width);
  ~CudnnConvolution();
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;

  // The workspace forward() needs: that of the algorithm Find chose.
  std::size_t workspace_bytes() const;
  // args.workspace must hold workspace_bytes() bytes; args' shape must be the constructor's.
  void forward(const Conv2dArgs<float>& args, cudaStream_t stream) const;
  // Every algorithm Find ran successfully, fastest first; the first is the one forward() uses.
  const std::vector<CudnnAlgorithmTiming>& candidates() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The baseline's launcher and its workspace size. Each image shape (size, pitches, filter width)
// gets one CudnnConvolution, built at the first call for it on the current device and kept, so
// cudnnFind runs once per shape: in a benchmark, in the (untimed) workspace sizing. 0 bytes when
// cuDNN is absent.
std::size_t cudnn_workspace_bytes(std::int64_t height, std::int64_t width, std::int64_t input_pitch,
                                  std::int64_t output_pitch, int filter_width);
void cudnn(const Conv2dArgs<float>& args, cudaStream_t stream);

}  // namespace cudalab::conv2d_variants
