// Rung `tutorial`: the tutorial's fused kernels as written (tutorial 004, section 10.1: fusedBiasReluKernel,
// fusedBiasGeluKernel and gelu_approx), with the tutorial's launch: blocks of 256 threads, grid
// (batch_size, ceil(features / 256)), one element per thread, a 32-bit index b * features + f.
// Fixes: the separate bias-add and activation passes (one read of x, one write of y). Costs: 2- or
// 4-byte accesses, a block per 256 elements, and blocks ordered row by row within a column chunk:
// the blocks in flight read 1 KiB (fp32) pieces of ~2000 different rows, not one contiguous front.
// The tutorial's GELU is the standard tanh approximation: its constants 0.7978845608 and 0.044715
// round to the same floats as sqrt(2/pi) and 0.044715 (tests/host/test_bias_act_reference.cpp), and
// 0.5 x (1 + tanhf(...)) is the textbook form; the check holds it to the same bound as the other
// rungs. Written for float only; the fp16/bf16 versions widen on load and round on store and
// change nothing else. The tutorial has no erf GELU, so activation 2 is refused.
#include <climits>
#include <cstdint>
#include <string>

#include "cudalab/activations.hpp"
#include "cudalab/error.hpp"
#include "ops/bias_act/activation.cuh"
#include "ops/bias_act/variants.hpp"

namespace cudalab::bias_act_variants {
namespace {

constexpr int kTutorialBlock = 256;

template <typename T>
__global__ void fused_bias_relu_kernel(T* output, const T* input, const T* bias, int batch_size, int features) {
  int b = blockIdx.x;
  int f = blockIdx.y * blockDim.x + threadIdx.x;

  if (b < batch_size && f < features) {
    float val = to_float(input[b * features + f]) + to_float(bias[f]);
    output[b * features + f] = from_float<T>(fmaxf(val, 0.0f));  // ReLU
  }
}

// GELU(x) = x * Phi(x) ~ 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
__device__ float gelu_approx(float x) {
  const float sqrt_2_over_pi = 0.7978845608f;
  const float coeff = 0.044715f;
  float x3 = x * x * x;
  float inner = sqrt_2_over_pi * (x + coeff * x3);
  return 0.5f * x * (1.0f + tanhf(inner));
}

template <typename T>
__global__ void fused_bias_gelu_kernel(T* output, const T* input, const T* bias, int batch_size, int features) {
  int b = blockIdx.x;
  int f = blockIdx.y * blockDim.x + threadIdx.x;

  if (b < batch_size && f < features) {
    float val = to_float(input[b * features + f]) + to_float(bias[f]);
    output[b * features + f] = from_float<T>(gelu_approx(val));
  }
}

}  // namespace

const char* tutorial_limits(std::int64_t rows, std::int64_t features, Activation activation) {
  if (activation != Activation::relu && activation != Activation::gelu_tanh)
    return "the tutorial writes ReLU and tanh-GELU kernels only, no exact (erf) GELU or SiLU";
  if (rows * features > INT_MAX) return "the tutorial's int index b * features + f overflows past 2^31 - 1 elements";
  if ((features + kTutorialBlock - 1) / kTutorialBlock > 65535)
    return "the tutorial's grid puts ceil(features / 256) blocks on y, at most 65535";
  return "";
}

template <typename T>
void tutorial(const BiasActArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  const char* why_not = tutorial_limits(args.rows, args.features, args.activation);
  CUDALAB_REQUIRE(*why_not == '\0', std::string("bias_act tutorial: ") + why_not);
  const int batch_size = static_cast<int>(args.rows), features = static_cast<int>(args.features);
  dim3 block(kTutorialBlock);
  dim3 grid(batch_size, (features + kTutorialBlock - 1) / kTutorialBlock);
  if (args.activation == Activation::relu) {
    fused_bias_relu_kernel<<<grid, block, 0, stream>>>(args.y, args.x, args.bias, batch_size, features);
  } else {
    fused_bias_gelu_kernel<<<grid, block, 0, stream>>>(args.y, args.x, args.bias, batch_size, features);
  }
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_BIAS_ACT_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, tutorial, BiasActArgs)

}  // namespace cudalab::bias_act_variants
