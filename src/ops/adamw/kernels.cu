// The AdamW rungs and baseline (variants.hpp). Per element the step reads p, g, m and v and writes p,
// m and v: 7 accesses, so its measure is the copy rate over them.
//   unfused:      four passes a tensor (decay, m, v, p), as torch's foreach steps run: p read and
//                 written twice, m and v read again by the last pass.
//   per_tensor:   one fused pass a tensor, element accesses; a model's many small tensors (norm
//                 weights, biases) each pay a launch.
//   multi_tensor: up to 48 tensors a launch, their pointers and sizes in the kernel's parameters;
//                 each thread finds its tensor by a binary search over the launch's prefix sums of
//                 units (a unit: one 16-byte vector of a tensor that allows them, else one element).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/adamw/variants.hpp"

namespace cudalab::adamw_variants {
namespace {

constexpr int kThreads = 256;

// The step's scalars, computed once on the host.
struct StepScalars {
  float decay;          // 1 - lr wd
  float beta1, beta2;   // the moments' rates
  float step_size;      // lr / (1 - b1^t)
  float inverse_bias2;  // 1 / sqrt(1 - b2^t)
  float eps;
};

StepScalars scalars_of(const AdamWHyperparameters& h) {
  const double t = static_cast<double>(h.step);
  return {static_cast<float>(1.0 - static_cast<double>(h.lr) * h.weight_decay),
          h.beta1,
          h.beta2,
          static_cast<float>(h.lr / (1.0 - std::pow(static_cast<double>(h.beta1), t))),
          static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(static_cast<double>(h.beta2), t))),
          h.eps};
}

// One element's step, in fp32.
__device__ __forceinline__ void step(float& p, float g, float& m, float& v, const StepScalars& s) {
  p *= s.decay;
  m = s.beta1 * m + (1.0f - s.beta1) * g;
  v = s.beta2 * v + (1.0f - s.beta2) * g * g;
  p -= s.step_size * m / (sqrtf(v) * s.inverse_bias2 + s.eps);
}

// kCount consecutive elements of each array (one 16-byte vector, or one element) stepped together.
template <int kCount, typename T>
__device__ __forceinline__ void step_run(const AdamWTensor<T>& t, std::int64_t first, const StepScalars& s) {
  float p[kCount], g[kCount], m[kCount], v[kCount];
  load_floats<kCount>(t.param + first, p);
  load_floats<kCount>(t.grad + first, g);
  load_floats<kCount>(t.exp_avg + first, m);
  load_floats<kCount>(t.exp_avg_sq + first, v);
#pragma unroll
  for (int k = 0; k < kCount; ++k) step(p[k], g[k], m[k], v[k], s);
  store_floats<kCount>(t.param + first, p);
  store_floats<kCount>(t.exp_avg + first, m);
  store_floats<kCount>(t.exp_avg_sq + first, v);
}

// kCount consecutive fp32 values (1, or a 16-bit vector's worth: two or more 16-byte vectors).
template <int kCount>
__device__ __forceinline__ void load_fp32(const float* p, float* out) {
  if constexpr (kCount == 1) {
    out[0] = *p;
  } else {
#pragma unroll
    for (int h = 0; h < kCount; h += kVector16<float>) load_floats<kVector16<float>>(p + h, out + h);
  }
}
template <int kCount>
__device__ __forceinline__ void store_fp32(float* p, const float* values) {
  if constexpr (kCount == 1) {
    *p = values[0];
  } else {
#pragma unroll
    for (int h = 0; h < kCount; h += kVector16<float>) store_floats<kVector16<float>>(p + h, values + h);
  }
}

// The same on a master-weight tensor: the step on the fp32 master, the parameter its rounding.
template <int kCount, typename T>
__device__ __forceinline__ void step_run(const AdamWMasterTensor<T>& t, std::int64_t first, const StepScalars& s) {
  float p[kCount], g[kCount], m[kCount], v[kCount];
  load_fp32<kCount>(t.master + first, p);
  load_floats<kCount>(t.grad + first, g);
  load_fp32<kCount>(t.exp_avg + first, m);
  load_fp32<kCount>(t.exp_avg_sq + first, v);
#pragma unroll
  for (int k = 0; k < kCount; ++k) step(p[k], g[k], m[k], v[k], s);
  store_fp32<kCount>(t.master + first, p);
  store_floats<kCount>(t.param + first, p);
  store_fp32<kCount>(t.exp_avg + first, m);
  store_fp32<kCount>(t.exp_avg_sq + first, v);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) per_tensor_kernel(const AdamWTensor<T> t, const StepScalars s) {
  for (std::int64_t i = global_thread_index(); i < t.n; i += global_thread_count()) step_run<1>(t, i, s);
}

// The tensors of one launch (AdamWTensor or AdamWMasterTensor): their arrays, whether each moves
// in vectors, and the prefix sums of their units (end[i]: the units of tensors 0..i).
template <typename Tensor>
struct Batch {
  Tensor tensor[kMaxTensorsPerLaunch];
  std::int64_t end[kMaxTensorsPerLaunch];
  bool vector[kMaxTensorsPerLaunch];
  int count;
};

// A unit: one 16-byte vector of the parameter's type (of each array), or one element.
template <typename Tensor>
constexpr int kUnitOf = kVector16<std::remove_pointer_t<decltype(Tensor::param)>>;

template <typename Tensor>
__global__ void __launch_bounds__(kThreads) multi_tensor_kernel(const Batch<Tensor> batch, const StepScalars s) {
  constexpr int kVec = kUnitOf<Tensor>;
  const std::int64_t total = batch.end[batch.count - 1];
  for (std::int64_t u = global_thread_index(); u < total; u += global_thread_count()) {
    int low = 0, high = batch.count - 1;  // the first tensor whose end is past u
    while (low < high) {
      const int mid = (low + high) / 2;
      if (batch.end[mid] > u) {
        high = mid;
      } else {
        low = mid + 1;
      }
    }
    const std::int64_t unit = u - (low == 0 ? 0 : batch.end[low - 1]);
    if (batch.vector[low]) {
      step_run<kVec>(batch.tensor[low], unit * kVec, s);
    } else {
      step_run<1>(batch.tensor[low], unit, s);
    }
  }
}

// The baseline's passes: each reads and writes what its step touches.
template <typename T>
__global__ void __launch_bounds__(kThreads) decay_kernel(const AdamWTensor<T> t, const StepScalars s) {
  for (std::int64_t i = global_thread_index(); i < t.n; i += global_thread_count())
    t.param[i] = from_float<T>(to_float(t.param[i]) * s.decay);
}
template <typename T>
__global__ void __launch_bounds__(kThreads) first_moment_kernel(const AdamWTensor<T> t, const StepScalars s) {
  for (std::int64_t i = global_thread_index(); i < t.n; i += global_thread_count())
    t.exp_avg[i] = from_float<T>(s.beta1 * to_float(t.exp_avg[i]) + (1.0f - s.beta1) * to_float(t.grad[i]));
}
template <typename T>
__global__ void __launch_bounds__(kThreads) second_moment_kernel(const AdamWTensor<T> t, const StepScalars s) {
  for (std::int64_t i = global_thread_index(); i < t.n; i += global_thread_count()) {
    const float g = to_float(t.grad[i]);
    t.exp_avg_sq[i] = from_float<T>(s.beta2 * to_float(t.exp_avg_sq[i]) + (1.0f - s.beta2) * g * g);
  }
}
template <typename T>
__global__ void __launch_bounds__(kThreads) update_kernel(const AdamWTensor<T> t, const StepScalars s) {
  for (std::int64_t i = global_thread_index(); i < t.n; i += global_thread_count()) {
    const float denominator = sqrtf(to_float(t.exp_avg_sq[i])) * s.inverse_bias2 + s.eps;
    t.param[i] = from_float<T>(to_float(t.param[i]) - s.step_size * to_float(t.exp_avg[i]) / denominator);
  }
}

// The master-weight baseline's casts.
template <typename From, typename To>
__global__ void __launch_bounds__(kThreads) cast_kernel(const From* from, To* to, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += global_thread_count())
    to[i] = from_float<To>(to_float(from[i]));
}
template <typename From, typename To>
void cast(const From* from, To* to, std::int64_t n, cudaStream_t stream) {
  cast_kernel<From, To><<<resident_grid_size(cast_kernel<From, To>, kThreads, n), kThreads, 0, stream>>>(from, to, n);
  CUDALAB_CHECK_LAUNCH();
}

template <typename Kernel, typename T>
void launch_over(Kernel* kernel, const AdamWTensor<T>& t, const StepScalars& s, cudaStream_t stream) {
  kernel<<<resident_grid_size(kernel, kThreads, t.n), kThreads, 0, stream>>>(t, s);
  CUDALAB_CHECK_LAUNCH();
}

// 16-byte accesses for a tensor whose arrays are 16-byte aligned and whose size is whole units.
template <typename T>
bool moves_in_vectors(const AdamWTensor<T>& t) {
  return t.n % kVector16<T> == 0 && is_aligned16(t.param) && is_aligned16(t.grad) && is_aligned16(t.exp_avg) &&
         is_aligned16(t.exp_avg_sq);
}
template <typename T>
bool moves_in_vectors(const AdamWMasterTensor<T>& t) {
  return t.n % kVector16<T> == 0 && is_aligned16(t.param) && is_aligned16(t.grad) && is_aligned16(t.master) &&
         is_aligned16(t.exp_avg) && is_aligned16(t.exp_avg_sq);
}

// Launches of up to kMaxTensorsPerLaunch tensors each, in order.
template <typename Tensor>
void launch_batches(const std::vector<Tensor>& tensors, const StepScalars& s, cudaStream_t stream) {
  Batch<Tensor> batch{};
  std::int64_t units = 0;
  const auto flush = [&] {
    if (batch.count == 0) return;
    const int blocks = resident_grid_size(multi_tensor_kernel<Tensor>, kThreads, units);
    multi_tensor_kernel<Tensor><<<blocks, kThreads, 0, stream>>>(batch, s);
    CUDALAB_CHECK_LAUNCH();
    batch = Batch<Tensor>{};
    units = 0;
  };
  for (const Tensor& t : tensors) {
    if (t.n == 0) continue;
    const bool vector = moves_in_vectors(t);
    units += vector ? t.n / kUnitOf<Tensor> : t.n;
    batch.tensor[batch.count] = t;
    batch.vector[batch.count] = vector;
    batch.end[batch.count] = units;
    if (++batch.count == kMaxTensorsPerLaunch) flush();
  }
  flush();
}

}  // namespace

template <typename T>
void unfused(const AdamWArgs<T>& args, cudaStream_t stream) {
  const StepScalars s = scalars_of(args.hyper);
  for (const AdamWTensor<T>& t : args.tensors) {
    if (t.n == 0) continue;
    launch_over(decay_kernel<T>, t, s, stream);
    launch_over(first_moment_kernel<T>, t, s, stream);
    launch_over(second_moment_kernel<T>, t, s, stream);
    launch_over(update_kernel<T>, t, s, stream);
  }
}

template <typename T>
void per_tensor(const AdamWArgs<T>& args, cudaStream_t stream) {
  const StepScalars s = scalars_of(args.hyper);
  for (const AdamWTensor<T>& t : args.tensors)
    if (t.n > 0) launch_over(per_tensor_kernel<T>, t, s, stream);
}

template <typename T>
void multi_tensor(const AdamWArgs<T>& args, cudaStream_t stream) {
  launch_batches(args.tensors, scalars_of(args.hyper), stream);
}

template <typename T>
void multi_tensor_master(const AdamWMasterArgs<T>& args, cudaStream_t stream) {
  launch_batches(args.tensors, scalars_of(args.hyper), stream);
}

template <typename T>
void unfused_master(const AdamWMasterArgs<T>& args, cudaStream_t stream) {
  const StepScalars s = scalars_of(args.hyper);
  auto* grad = static_cast<float*>(args.workspace);
  for (const AdamWMasterTensor<T>& t : args.tensors) {
    if (t.n == 0) continue;
    cast(t.grad, grad, t.n, stream);
    launch_over(per_tensor_kernel<float>, AdamWTensor<float>{t.master, grad, t.exp_avg, t.exp_avg_sq, t.n}, s, stream);
    cast(t.master, t.param, t.n, stream);
  }
}

CUDALAB_ADAMW_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, unfused, AdamWArgs)
CUDALAB_ADAMW_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, per_tensor, AdamWArgs)
CUDALAB_ADAMW_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, multi_tensor, AdamWArgs)
CUDALAB_ADAMW_MASTER_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, multi_tensor_master, AdamWMasterArgs)
CUDALAB_ADAMW_MASTER_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, unfused_master, AdamWMasterArgs)

}  // namespace cudalab::adamw_variants
