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

// An array of a pass: rows `pitch` elements apart (one row when the problem is flat).
template <typename T>
struct PassArray {
  T* data;
  std::int64_t pitch;
};

// The unfused baseline: one kernel per step, each a pass through memory, out = fn(a, b) element by
// element over rows x width, a grid that strides the rows and each row's columns (element
// accesses; the fp32 intermediates keep its result within the check's bound, where eager
// PyTorch's 16-bit ones round twice).
template <typename A, typename B, typename Out, typename Fn>
__global__ void __launch_bounds__(kBlock) pass_kernel(PassArray<const A> a, PassArray<const B> b, PassArray<Out> out,
                                                      std::int64_t rows, std::int64_t width, Fn fn) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kBlock;
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y)
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < width; i += stride)
      out.data[row * out.pitch + i] =
          from_float<Out>(fn(to_float(a.data[row * a.pitch + i]), to_float(b.data[row * b.pitch + i])));
}

template <typename A, typename B, typename Out, typename Fn>
void launch_pass(PassArray<const A> a, PassArray<const B> b, PassArray<Out> out, std::int64_t rows, std::int64_t width,
                 Fn fn, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  auto* kernel = pass_kernel<A, B, Out, Fn>;
  const int across = resident_grid_size(kernel, kBlock, width);
  const int down = static_cast<int>(std::clamp<std::int64_t>(resident_grid_size(kernel, kBlock, rows * width) / across,
                                                             1, std::min<std::int64_t>(rows, 65535)));
  kernel<<<dim3(across, down), kBlock, 0, stream>>>(a, b, out, rows, width, fn);
  CUDALAB_CHECK_LAUNCH();
}

// The geometry of an Args' arrays: rows and width, and the pitch of the packed arrays (gate and
// up, dgate and dup) and of the dense ones (y, dy and the baseline's fp32 scratch).
struct Geometry {
  std::int64_t rows, width, packed, dense;
};
template <typename Args>
Geometry geometry(const Args& a) {
  if (a.rows.pitch == 0) return {1, a.n, a.n, a.n};
  return {a.rows.width == 0 ? 0 : a.n / a.rows.width, a.rows.width, a.rows.pitch, a.rows.width};
}

template <int kIn, int kOut>
MapRows<kIn, kOut> map_rows(const Geometry& g, const std::int64_t (&in)[kIn], const std::int64_t (&out)[kOut]) {
  MapRows<kIn, kOut> shape;
  shape.rows = g.rows;
  shape.width = g.width;
  std::copy(in, in + kIn, shape.in_pitch);
  std::copy(out, out + kOut, shape.out_pitch);
  return shape;
}

// The flat map's geometry: gate and up in, y out; gate, up and dy in, dgate and dup out.
template <typename T>
MapRows<2, 1> rows_of(const SwigluArgs<T>& a) {
  const Geometry g = geometry(a);
  return map_rows<2, 1>(g, {g.packed, g.packed}, {g.dense});
}
template <typename T>
MapRows<3, 2> rows_of(const SwigluBackwardArgs<T>& a) {
  const Geometry g = geometry(a);
  return map_rows<3, 2>(g, {g.packed, g.packed, g.dense}, {g.packed, g.packed});
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
    launch_flat_map<1, 1>(FlatArrays<T, 2, 1>{{a.gate, a.up}, {a.y}}, rows_of(a), Forward<decltype(act)>{}, stream);
  });
}

template <typename T>
void backward_scalar(const SwigluBackwardArgs<T>& a, cudaStream_t stream) {
  with_activation(a.activation, [&](auto act) {
    launch_flat_map<1, 1>(FlatArrays<T, 3, 2>{{a.gate, a.up, a.dy}, {a.dgate, a.dup}}, rows_of(a),
                          Backward<decltype(act)>{}, stream);
  });
}

template <typename T>
void vectorized(const SwigluArgs<T>& a, cudaStream_t stream) {
  with_activation(a.activation, [&](auto act) {
    launch_flat_map_vectorized(FlatArrays<T, 2, 1>{{a.gate, a.up}, {a.y}}, rows_of(a), Forward<decltype(act)>{},
                               stream);
  });
}

template <typename T>
void backward_vectorized(const SwigluBackwardArgs<T>& a, cudaStream_t stream) {
  with_activation(a.activation, [&](auto act) {
    launch_flat_map_vectorized(FlatArrays<T, 3, 2>{{a.gate, a.up, a.dy}, {a.dgate, a.dup}}, rows_of(a),
                               Backward<decltype(act)>{}, stream);
  });
}

// act(gate) into the fp32 workspace, then its product with up: two passes.
template <typename T>
void unfused(const SwigluArgs<T>& a, cudaStream_t stream) {
  const Geometry g = geometry(a);
  auto* activated = static_cast<float*>(a.workspace);
  const PassArray<const T> gate{a.gate, g.packed}, up{a.up, g.packed};
  with_activation(a.activation, [&](auto act) {
    launch_pass(gate, gate, PassArray<float>{activated, g.dense}, g.rows, g.width, ActivationOfFirst<decltype(act)>{},
                stream);
  });
  launch_pass(PassArray<const float>{activated, g.dense}, up, PassArray<T>{a.y, g.dense}, g.rows, g.width, Product{},
              stream);
}

// dup = dy * act(gate) and dgate = dy * (act'(gate) * up), each a pass into the fp32 workspace
// and a product pass: four passes.
template <typename T>
void backward_unfused(const SwigluBackwardArgs<T>& a, cudaStream_t stream) {
  const Geometry g = geometry(a);
  const PassArray<const T> gate{a.gate, g.packed}, up{a.up, g.packed}, dy{a.dy, g.dense};
  const PassArray<const float> scratch{static_cast<const float*>(a.workspace), g.dense};
  const PassArray<float> scratch_out{static_cast<float*>(a.workspace), g.dense};
  with_activation(a.activation, [&](auto act) {
    using Act = decltype(act);
    launch_pass(gate, gate, scratch_out, g.rows, g.width, ActivationOfFirst<Act>{}, stream);
    launch_pass(scratch, dy, PassArray<T>{a.dup, g.packed}, g.rows, g.width, Product{}, stream);
    launch_pass(gate, up, scratch_out, g.rows, g.width, SlopeTimes<Act>{}, stream);
    launch_pass(scratch, dy, PassArray<T>{a.dgate, g.packed}, g.rows, g.width, Product{}, stream);
  });
}

CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, scalar, SwigluArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_scalar, SwigluBackwardArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, vectorized, SwigluArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_vectorized, SwigluBackwardArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, unfused, SwigluArgs)
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_unfused, SwigluBackwardArgs)

}  // namespace cudalab::swiglu_variants
