// Rung `tutorial_unzeroed` (BROKEN on purpose): the tutorial's LayerNorm kernel (tutorial 004, layerNormKernel) as
// written: one block per row, each warp's partial sums added into __shared__ shared_mean and
// shared_var with atomicAdd, which nothing ever sets to zero. Shared memory is not cleared between
// blocks or kernels: a block starts from whatever was there, which for every block after the first
// wave (more rows than the 1056 blocks of 256 threads an H100 holds at once) is an earlier block's
// row sums. The launcher first fills every SM's shared memory with 0xFF bytes (NaN), as the
// harness poisons outputs, so that the first wave does not pass by luck either when shared memory
// happens to read zero (as it may in a fresh process, which is how such a bug survives a small
// test). Kept to be shown failing; tutorial_fixed stands beside it. The tutorial gives no launch
// configuration: 256 threads, as its other kernels use. compute-sanitizer does not see this fault:
// initcheck tracks global memory only, and racecheck finds no hazard (the atomics and the reads
// are separated by barriers); the check against the reference is what shows it.
//
// Changes from the tutorial's text, none of which touches the fault: the element type is a
// template parameter (loads widen to fp32, the store rounds to T), and thread 0 writes the mean
// and rstd the kernel computes (the op saves them; the tutorial drops them).
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

constexpr int kTutorialThreads = 256;
constexpr int kPoisonThreads = 1024;

// Fills the block's dynamic shared memory, all an SM has, with 0xFF bytes. Volatile: the stores
// have no reader in this kernel and would otherwise be removed.
__global__ void __launch_bounds__(kPoisonThreads) poison_shared_memory_kernel(int words) {
  extern __shared__ unsigned shared_words[];
  volatile unsigned* words_out = shared_words;
  for (int i = static_cast<int>(threadIdx.x); i < words; i += kPoisonThreads) words_out[i] = 0xFFFFFFFFu;
}

// Two blocks per SM, one at a time: every SM's shared memory is overwritten before the next
// kernel on the stream starts.
void poison_shared_memory(cudaStream_t stream) {
  const auto bytes = static_cast<int>(shared_memory_optin());
  CUDALAB_CUDA_CHECK(
      cudaFuncSetAttribute(poison_shared_memory_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const int blocks = 2 * current_gpu().sm_count;
  poison_shared_memory_kernel<<<blocks, kPoisonThreads, static_cast<std::size_t>(bytes), stream>>>(
      bytes / static_cast<int>(sizeof(unsigned)));
  CUDALAB_CHECK_LAUNCH();
}

template <typename T>
__global__ void layer_norm_tutorial_unzeroed_kernel(T* output, const T* input, const T* gamma, const T* beta,
                                                    float* mean_out, float* rstd_out, int batch_size, int features,
                                                    float eps) {
  int b = blockIdx.x;

  if (b >= batch_size) return;

  __shared__ float shared_mean;
  __shared__ float shared_var;

  // Step 1: the mean (a reduction)
  float sum = 0.0f;
  for (int f = threadIdx.x; f < features; f += blockDim.x) {
    sum += to_float(input[b * features + f]);
  }

  // Within the warp
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) {
    sum += __shfl_down_sync(0xffffffff, sum, offset);
  }

  if (threadIdx.x % warpSize == 0) {
    atomicAdd(&shared_mean, sum);
  }
  __syncthreads();

  float mean = shared_mean / features;

  // Step 2: the variance
  float var_sum = 0.0f;
  for (int f = threadIdx.x; f < features; f += blockDim.x) {
    float diff = to_float(input[b * features + f]) - mean;
    var_sum += diff * diff;
  }

  for (int offset = warpSize / 2; offset > 0; offset >>= 1) {
    var_sum += __shfl_down_sync(0xffffffff, var_sum, offset);
  }

  if (threadIdx.x % warpSize == 0) {
    atomicAdd(&shared_var, var_sum);
  }
  __syncthreads();

  float var = shared_var / features;
  float inv_std = rsqrtf(var + eps);

  // Step 3: normalize, scale and shift
  for (int f = threadIdx.x; f < features; f += blockDim.x) {
    float normalized = (to_float(input[b * features + f]) - mean) * inv_std;
    output[b * features + f] = from_float<T>(to_float(gamma[f]) * normalized + to_float(beta[f]));
  }

  if (threadIdx.x == 0) {
    if (mean_out != nullptr) mean_out[b] = mean;
    if (rstd_out != nullptr) rstd_out[b] = inv_std;
  }
}

}  // namespace

template <typename T>
void tutorial_unzeroed(const NormForwardArgs<T>& a, cudaStream_t stream) {
  CUDALAB_REQUIRE(a.norm == Norm::layer, "tutorial_unzeroed: the tutorial's kernel is a LayerNorm");
  const std::string why = forward_shape_limits(a.rows, a.features) + tutorial_limits(a.rows, a.features);
  CUDALAB_REQUIRE(why.empty(), "tutorial_unzeroed: " + why);
  if (a.rows == 0) return;
  poison_shared_memory(stream);
  layer_norm_tutorial_unzeroed_kernel<<<static_cast<int>(a.rows), kTutorialThreads, 0, stream>>>(
      a.y, a.x, a.gamma, a.beta, a.mean, a.rstd, static_cast<int>(a.rows), static_cast<int>(a.features), a.eps);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, tutorial_unzeroed, NormForwardArgs)

}  // namespace cudalab::norms_variants
