// The baseline (variants.hpp): cross-entropy as eager PyTorch composes it, one pass over memory per
// step with the [rows, vocab] intermediate in an fp32 workspace, a block of 512 threads per row and
// element accesses. Forward: log_softmax (reads the row twice, writes logp), the loss (reads logp),
// the gradient (reads logp, writes dlogits). Backward: nll_loss's gradient spread over the classes
// (writes it), then log_softmax's backward (reads it, the logits, and writes dlogits). Eager keeps
// the intermediates in the logits' dtype, which moves fewer bytes but rounds once more.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/cross_entropy.hpp"
#include "cudalab/error.hpp"
#include "ops/cross_entropy/variants.hpp"
#include "ops/softmax/softmax.cuh"

namespace cudalab::cross_entropy_variants {
namespace {

using softmax_variants::BlockReduce;
using softmax_variants::exp_shifted;

constexpr int kThreads = 512;

// logp = (x - max) - log(sum), as ATen's log_softmax forms it (no rounding of lse's magnitude), over
// every row (ignored ones too, as eager does); lse = max + log(sum) is kept for the rows counted.
template <typename T>
__global__ void __launch_bounds__(kThreads) log_softmax_kernel(const CrossEntropyArgs<T> p) {
  __shared__ float scratch[kWarpSize];
  const BlockReduce reduce{scratch};
  const std::int64_t row = blockIdx.x;
  const T* x = p.logits + row * p.vocab;
  float* logp = static_cast<float*>(p.workspace) + row * p.vocab;
  const int thread = static_cast<int>(threadIdx.x);
  const float max = reduce.max(softmax_variants::scalar_row_max(x, p.vocab, thread, kThreads));
  const float log_sum = logf(reduce.sum(softmax_variants::scalar_row_sum_exp(x, p.vocab, max, thread, kThreads)));
  for (std::int64_t j = thread; j < p.vocab; j += kThreads) logp[j] = (to_float(x[j]) - max) - log_sum;
  if (thread == 0) p.lse[row] = p.target[row] == p.ignore_index ? 0.0f : max + log_sum;
}

// loss = -((1 - e) logp[target] + (e / vocab) sum_j logp_j).
template <typename T>
__global__ void __launch_bounds__(kThreads) nll_kernel(const CrossEntropyArgs<T> p) {
  __shared__ float scratch[kWarpSize];
  const std::int64_t row = blockIdx.x, target = p.target[row];
  if (target == p.ignore_index) {
    if (threadIdx.x == 0) p.loss[row] = 0.0f;
    return;
  }
  const float* logp = static_cast<const float*>(p.workspace) + row * p.vocab;
  float sum = 0.0f;
  if (p.label_smoothing != 0.0f) {
    for (std::int64_t j = threadIdx.x; j < p.vocab; j += kThreads) sum += logp[j];
    sum = BlockReduce{scratch}.sum(sum);
  }
  if (threadIdx.x == 0) {
    const float picked = 0 <= target && target < p.vocab ? logp[target] : NAN;
    p.loss[row] = -((1.0f - p.label_smoothing) * picked + p.label_smoothing * sum / static_cast<float>(p.vocab));
  }
}

// dlogits = scale (exp(logp) - e / vocab - (1 - e) [j == target]).
template <typename T>
__global__ void __launch_bounds__(kThreads) softmax_gradient_kernel(const CrossEntropyArgs<T> p) {
  const std::int64_t row = blockIdx.x, target = p.target[row];
  const bool ignored = target == p.ignore_index, valid = 0 <= target && target < p.vocab;
  const float scale = ignored ? 0.0f : !valid ? NAN : p.grad_scale != nullptr ? *p.grad_scale : 1.0f;
  const float* logp = static_cast<const float*>(p.workspace) + row * p.vocab;
  const float spread = p.label_smoothing / static_cast<float>(p.vocab), on_target = 1.0f - p.label_smoothing;
  T* dx = p.dlogits + row * p.vocab;
  for (std::int64_t j = threadIdx.x; j < p.vocab; j += kThreads)
    dx[j] = from_float<T>(ignored ? 0.0f : scale * (expf(logp[j]) - spread - (j == target ? on_target : 0.0f)));
}

// nll_loss's backward with smoothing: g_j = -dloss ((1 - e) [j == target] + e / vocab).
template <typename T>
__global__ void __launch_bounds__(kThreads) nll_backward_kernel(const CrossEntropyBackwardArgs<T> p) {
  const std::int64_t row = blockIdx.x, target = p.target[row];
  const bool ignored = target == p.ignore_index, valid = 0 <= target && target < p.vocab;
  const float dloss = ignored ? 0.0f : !valid ? NAN : p.dloss[row * p.dloss_stride];
  const float spread = p.label_smoothing / static_cast<float>(p.vocab), on_target = 1.0f - p.label_smoothing;
  float* g = static_cast<float*>(p.workspace) + row * p.vocab;
  for (std::int64_t j = threadIdx.x; j < p.vocab; j += kThreads)
    g[j] = -dloss * (spread + (j == target ? on_target : 0.0f));
}

// log_softmax's backward: dx_j = g_j - exp(x_j - lse) sum_k g_k.
template <typename T>
__global__ void __launch_bounds__(kThreads) log_softmax_backward_kernel(const CrossEntropyBackwardArgs<T> p) {
  __shared__ float scratch[kWarpSize];
  const std::int64_t row = blockIdx.x;
  const bool ignored = p.target[row] == p.ignore_index;
  const float* g = static_cast<const float*>(p.workspace) + row * p.vocab;
  const T* x = p.logits + row * p.vocab;
  T* dx = p.dlogits + row * p.vocab;
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < p.vocab; j += kThreads) sum += g[j];
  sum = BlockReduce{scratch}.sum(sum);
  const float lse = ignored ? 0.0f : p.lse[row];
  for (std::int64_t j = threadIdx.x; j < p.vocab; j += kThreads)
    dx[j] = from_float<T>(ignored ? 0.0f : g[j] - exp_shifted(to_float(x[j]), lse) * sum);
}

void require_rows(std::int64_t rows) {
  CUDALAB_REQUIRE(rows <= 0x7fffffff, "cross_entropy unfused: more than 2^31-1 rows (a block per row)");
}

// Eager's passes here are plain cross-entropy's.
void require_plain(float z_loss, float softcap) {
  CUDALAB_REQUIRE(z_loss == 0.0f && softcap == 0.0f, std::string("cross_entropy unfused: ") + kPlainOnly);
}

}  // namespace

template <typename T>
void unfused(const CrossEntropyArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  require_rows(args.rows);
  require_plain(args.z_loss, args.softcap);
  const auto blocks = static_cast<unsigned>(args.rows);
  log_softmax_kernel<T><<<blocks, kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
  nll_kernel<T><<<blocks, kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
  if (args.dlogits != nullptr) {
    softmax_gradient_kernel<T><<<blocks, kThreads, 0, stream>>>(args);
    CUDALAB_CHECK_LAUNCH();
  }
}

template <typename T>
void backward_unfused(const CrossEntropyBackwardArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  require_rows(args.rows);
  require_plain(args.z_loss, args.softcap);
  const auto blocks = static_cast<unsigned>(args.rows);
  nll_backward_kernel<T><<<blocks, kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
  log_softmax_backward_kernel<T><<<blocks, kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, unfused, CrossEntropyArgs)
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_unfused, CrossEntropyBackwardArgs)

}  // namespace cudalab::cross_entropy_variants
