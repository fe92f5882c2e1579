// Rung `tutorial_fixed`: the tutorial's LayerNorm with its faults fixed. Fixes, relative to rung `tutorial_unzeroed`:
// thread 0 sets shared_mean and shared_var to zero before the first atomicAdd (a barrier orders the zeroing before
// every warp's add); and the sums run over d = x - x[0] (the row's first element), with mean = x[0] + sum(d) / F, so
// that a row at 1e4 + noise keeps its noise in fp32: the tutorial's sum(x) / F is off by up to half an fp32 ulp of 1e4
// (2^-11), which (x - mean) * rstd turns into a relative error of ~1e-3 in y, a hundred times the 1e-5 fp32 outputs are
// held to. What it still costs: the row is read three times (mean, variance, output; the second and third reads come
// from L1/L2 only while the row is narrow), and one 256-thread block per row whatever the width: a 31-feature row
// leaves 7 warps idle, a 262144-feature row has its 256 threads walk 1024 elements each per pass with one 4-byte (or
// 2-byte) load at a time, and each sum waits on shared-memory atomics.
#include <string>

#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

constexpr int kTutorialThreads = 256;

template <typename T>
__global__ void layer_norm_tutorial_fixed_kernel(T* output, const T* input, const T* gamma, const T* beta,
                                                 float* mean_out, float* rstd_out, int batch_size, int features,
                                                 float eps) {
  int b = blockIdx.x;

  if (b >= batch_size) return;

  __shared__ float shared_mean;
  __shared__ float shared_var;
  if (threadIdx.x == 0) {
    shared_mean = 0.0f;
    shared_var = 0.0f;
  }
  __syncthreads();

  const float pivot = to_float(input[b * features]);

  // Step 1: the mean of d = x - pivot
  float sum = 0.0f;
  for (int f = threadIdx.x; f < features; f += blockDim.x) {
    sum += to_float(input[b * features + f]) - pivot;
  }
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
    sum += __shfl_down_sync(kFullWarpMask, sum, offset);
  }
  if (threadIdx.x % kWarpSize == 0) {
    atomicAdd(&shared_mean, sum);
  }
  __syncthreads();

  float mean = shared_mean / features;

  // Step 2: the variance
  float var_sum = 0.0f;
  for (int f = threadIdx.x; f < features; f += blockDim.x) {
    float diff = to_float(input[b * features + f]) - pivot - mean;
    var_sum += diff * diff;
  }
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
    var_sum += __shfl_down_sync(kFullWarpMask, var_sum, offset);
  }
  if (threadIdx.x % kWarpSize == 0) {
    atomicAdd(&shared_var, var_sum);
  }
  __syncthreads();

  float inv_std = rsqrtf(shared_var / features + eps);

  // Step 3: normalize, scale and shift
  for (int f = threadIdx.x; f < features; f += blockDim.x) {
    float normalized = (to_float(input[b * features + f]) - pivot - mean) * inv_std;
    output[b * features + f] = from_float<T>(to_float(gamma[f]) * normalized + to_float(beta[f]));
  }

  if (threadIdx.x == 0) {
    if (mean_out != nullptr) mean_out[b] = pivot + mean;
    if (rstd_out != nullptr) rstd_out[b] = inv_std;
  }
}

}  // namespace

template <typename T>
void tutorial_fixed(const NormForwardArgs<T>& a, cudaStream_t stream) {
  CUDALAB_REQUIRE(a.norm == Norm::layer, "tutorial_fixed: the tutorial's kernel is a LayerNorm");
  const std::string why = forward_shape_limits(a.rows, a.features) + tutorial_limits(a.rows, a.features);
  CUDALAB_REQUIRE(why.empty(), "tutorial_fixed: " + why);
  if (a.rows == 0) return;
  layer_norm_tutorial_fixed_kernel<<<static_cast<int>(a.rows), kTutorialThreads, 0, stream>>>(
      a.y, a.x, a.gamma, a.beta, a.mean, a.rstd, static_cast<int>(a.rows), static_cast<int>(a.features), a.eps);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, tutorial_fixed, NormForwardArgs)

}  // namespace cudalab::norms_variants
