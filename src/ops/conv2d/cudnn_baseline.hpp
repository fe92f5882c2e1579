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

// One entry of cudnnFindConvolutionForwardAlgorithm's answer.
struct CudnnAlgorithmTiming {
  std::string algorithm;    // "IMPLICIT_PRECOMP_GEMM", "FFT_TILING", ...
  double milliseconds = 0;  // cuDNN's own timing of one launch (warm, not L2-flushed)
  std::size_t workspace_bytes = 0;
};

// Descriptors for one image shape (N = C = K = 1, pitched rows), fp32 compute with FMA math only
// (no TF32 tensor cores: the ladder is plain fp32 too), zero padding R/2 and cross-correlation.
// The constructor runs cudnnFindConvolutionForwardAlgorithm once (untimed, on buffers cuDNN
// allocates itself), keeps its fastest successful algorithm and allocates that algorithm's
// workspace, so forward() is the convolution and nothing else. Throws cudalab::Error (library)
// when cuDNN is missing or fails.
class CudnnConvolution {
 public:
  CudnnConvolution(std::int64_t height, std::int64_t width, std::int64_t input_pitch, std::int64_t output_pitch,
                   int filter_width);
  ~CudnnConvolution();
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;

  void forward(const Conv2dArgs& args, cudaStream_t stream) const;
  // Every algorithm Find ran successfully, fastest first; the first is the one forward() uses.
  const std::vector<CudnnAlgorithmTiming>& candidates() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace cudalab::conv2d_variants
