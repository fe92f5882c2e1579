// The gated-unit rungs (SwiGLU and GeGLU, by the activation an Args names) on the flat map kernel
// (core/flat_map.cuh), and the unfused baseline's passes.
#include <algorithm>
#include <cstdint>

#include "core/flat_map.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "cudalab/swiglu.hpp"
#include "ops/swiglu/variants.hpp"

namespace cudalab::swiglu_variants {
namespace {

constexpr int kBlock = 256;

// expf, not __expf: the kernels are memory-bound, and the accurate exponential keeps the result
// within a few fp32 ulps where the fast one drifts for |v| in the tens.
__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// The activations: act(g) and its slope act'(g), each formed before any product with dy or up, so
// a gate where the activation is flat (s = 0, or tanh = +-1) gives 0, never 0 * inf.
struct Silu {
  __device__ static float value(float g) { return g * sigmoid(g); }
  __device__ static void value_and_slope(float g, float& value, float& slope) {
    const float s = sigmoid(g);
    value = g * s;
    slope = s * (1.0f + g * (1.0f - s));
  }
};

// tanhf, not a fast tanh, for the same reason as expf.
struct GeluTanh {
  static constexpr float kScale = 0.7978845608028654f;  // sqrt(2 / pi)
  static constexpr float kCubic = 0.044715f;
  __device__ static float tanh_of(float g) { return tanhf(kScale * (g + kCubic * g * g * g)); }
  __device__ static float value(float g) { return 0.5f * g * (1.0f + tanh_of(g)); }
  __device__ static void value_and_slope(float g, float& value, float& slope) {
    const float t = tanh_of(g), flat = 1.0f - t * t;
    value = 0.5f * g * (1.0f + t);
    slope = 0.5f * (1.0f + t) + (flat == 0.0f ? 0.0f : 0.5f * g * flat * kScale * (1.0f + 3.0f * kCubic * g * g));
  }
};

// y = act(gate) * up.
template <typename Act>
struct Forward {
  __device__ void operator()(const float (&x)[2], float (&y)[1]) const { y[0] = Act::value(x[0]) * x[1]; }
};

// (gate, up, dy) -> (dgate, dup) = (dy * up * act'(gate), dy * act(gate)).
template <typename Act>
struct Backward {
  __device__ void operator()(const float (&x)[3], float (&y)[2]) const {
    const float g = x[0], u = x[1], dy = x[2];
    float value, slope;
    Act::value_and_slope(g, value, slope);
    y[0] = dy * (u * slope);
    y[1] = dy * value;
  }
};

// Runs launch(Act{}) with the activation `activation` names.
template <typename Launch>
void with_activation(GluActivation activation, Launch launch) {
  if (activation == GluActivation::gelu_tanh) {
    launch(GeluTanh{});
  } else {
    launch(Silu{});
  }
}

// The unfused baseline: one kernel per step, each a pass through memory, out[i] = fn(a[i], b[i])
// over a grid that strides the array (element accesses; the fp32 intermediates keep its result
// within the check's bound, where eager PyTorch's 16-bit ones round twice).
template <typename A, typename B, typename Out, typename Fn>
__global__ void __launch_bounds__(kBlock)
    pass_kernel(const A* __restrict__ a, const B* __restrict__ b, Out* __restrict__ out, std::int64_t n, Fn fn) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kBlock;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < n; i += stride)
    out[i] = from_float<Out>(fn(to_float(a[i]), to_float(b[i])));
}

template <typename A, typename B, typename Out, typename Fn>
void launch_pass(const A* a, const B* b, Out* out, std::int64_t n, Fn fn, cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = resident_grid_size(pass_kernel<A, B, Out, Fn>, kBlock, n);
  pass_kernel<<<blocks, kBlock, 0, stream>>>(a, b, out, n, fn);
  CUDALAB_CHECK_LAUNCH();
}

template <typename Act>
struct ActivationOfFirst {
  __device__ float operator()(float g, float) const { return Act::value(g); }
};
struct Product {
  __device__ float operator()(float x, float y) const { return x * y; }
};
// act'(g) * up.
template <typename Act>
struct SlopeTimes {
  __device__ float operator()(float g, float up) const {
    float value, slope;
    Act::value_and_slope(g, value, slope);
    return up * slope;
  }
};

}  // namespace

template <typename T>
void scalar(const SwigluArgs<T>& a, cudaStream_t stream) {
  with_activation(a.activation, [&](auto act) {
    launch_flat_map<1, 1>(FlatArrays<T, 2, 1>{{a.gate, a.up}, {a.y}}, a.n, Forward<decltype(act)>{}, stream);
  });
}

template <typename T>
void backward_scalar(const SwigluBackwardArgs<T>& a, cudaStream_t stream) {
  with_activation(a.activation, [&](auto act) {
    launch_flat_map<1, 1>(FlatArrays<T, 3, 2>{{a.gate, a.up, a.dy}, {a.dgate, a.dup}}, a.n, Backward<decltype(act)>{},
                          stream);
  });
}

template <typename T>
void vectorized(const SwigluArgs<T>& a, cudaStream_t stream) {
  with_activation(a.activation, [&](auto act) {
    launch_flat_map_vectorized(FlatArrays<T, 2, 1>{{a.gate, a.up}, {a.y}}, a.n, Forward<decltype(act)>{}, stream);
  });
}

template <typename T>
void backward_vectorized(const SwigluBackwardArgs<T>& a, cudaStream_t stream) {
  with_activation(a.activation, [&](auto act) {
    launch_flat_map_vectorized(FlatArrays<T, 3, 2>{{a.gate, a.up, a.dy}, {a.dgate, a.dup}}, a.n,
                               Backward<decltype(act)>{}, stream);
  });
}

// act(gate) into the fp32 workspace, then its product with up: two passes.
template <typename T>
void unfused(const SwigluArgs<T>& a, cudaStream_t stream) {
  auto* activated = static_cast<float*>(a.workspace);
  with_activation(a.activation, [&](auto act) {
    launch_pass(a.gate, a.gate, activated, a.n, ActivationOfFirst<decltype(act)>{}, stream);
  });
  launch_pass(activated, a.up, a.y, a.n, Product{}, stream);
}

// dup = dy * act(gate) and dgate = dy * (act'(gate) * up), each a pass into the fp32 workspace
// and a product pass: four passes.
template <typename T>
void backward_unfused(const SwigluBackwardArgs<T>& a, cudaStream_t stream) {
  auto* scratch = static_cast<float*>(a.workspace);
  with_activation(a.activation, [&](auto act) {
    using Act = decltype(act);
    launch_pass(a.gate, a.gate, scratch, a.n, ActivationOfFirst<Act>{}, stream);
    launch_pass(scratch, a.dy, a.dup, a.n, Product{}, stream);
    launch_pass(a.gate, a.up, scratch, a.n, SlopeTimes<Act>{}, stream);
    launch_pass(scratch, a.dy, a.dgate, a.n, Product{}, stream);
  });
}

CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, scalar, SwigluArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_scalar, SwigluBackwardArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, vectorized, SwigluArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_vectorized, SwigluBackwardArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, unfused, SwigluArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_unfused, SwigluBackwardArgs)

}  // namespace cudalab::swiglu_variants
