// What every bias + activation kernel shares: the activations and their derivatives in fp32, the
// loads and stores of 16-byte vectors (or single elements) as fp32 values, and the host dispatch
// from cudalab::Activation to a kernel instantiated for it.
//
// The GELU (tanh) of the ladder's own kernels is written as v * sigmoid(2z) with
// z = sqrt(2/pi) (v + 0.044715 v^3), which equals 0.5 v (1 + tanh z) exactly: one __expf (MUFU.EX2)
// and one __fdividef (MUFU.RCP) per element, 13 SASS instructions where tanhf takes about 24 (its
// polynomial, a select and the same two MUFUs). At bf16 the forward must turn about 2.9 elements per
// clock per SM at the copy rate, so instruction count matters there. The error: __expf is within
// (2 + 1.173 |2z|) ulps and __fdividef within 2, and the form has no cancellation; with each
// instruction at its documented worst, y stays within 3.5 u (|y| + |v|) of the exact value
// (u = 2^-24), inside the check's 8 u (|y| + |v|) (reference.hpp). tanhf's 0.5 v (1 + tanh z) is
// relatively no better for v < 0, where 1 + tanh z cancels. GELU (erf): see GeluErf.
#pragma once

#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/fast_math.cuh"
#include "core/vector.cuh"
#include "cudalab/activations.hpp"
#include "cudalab/error.hpp"
#include "ops/convert/convert.cuh"
#include "ops/gemm/epilogue.cuh"

namespace cudalab::bias_act_variants {

using convert_variants::Conversion;
using convert_variants::Pair;
using gemm_variants::from_float;
using gemm_variants::to_float;

inline constexpr float kSqrt2OverPi = 0.7978845608028654f;
inline constexpr float kGeluCubic = 0.044715f;
inline constexpr float kSqrtHalf = 0.7071067811865476f;
inline constexpr float kInvSqrt2Pi = 0.3989422804014327f;

// x + bias passes through unchanged: the unfused baseline's first kernel.
struct Identity {
  static __device__ __forceinline__ float forward(float v) { return v; }
};

// Each activation's forward_and_derivative(v, g) returns forward(v) and sets g = derivative(v),
// sharing their work where they have some in common (the GEMM's fused epilogue keeps g for the
// backward).
struct Relu {
  static __device__ __forceinline__ float forward(float v) { return fmaxf(v, 0.0f); }
  // 0 at v == 0, as PyTorch's threshold_backward takes it.
  static __device__ __forceinline__ float derivative(float v) { return v > 0.0f ? 1.0f : 0.0f; }
  static __device__ __forceinline__ float forward_and_derivative(float v, float& g) {
    g = derivative(v);
    return forward(v);
  }
};

// Below this GELU is -0 in fp32 (|GELU(-20)| < 1e-80); inputs under it are raised to it, so -inf (an
// fp16 x + bias that overflowed, as the unfused baseline stores it) gives -0 rather than
// -inf * 0 = NaN. A NaN input stays NaN (max.NaN keeps it).
inline constexpr float kGeluFloor = -20.0f;

__device__ __forceinline__ float gelu_input(float v) { return max_nan(v, kGeluFloor); }

// GELU (tanh) = v s with s = sigmoid(2 z), z = sqrt(2/pi) (v + c v^3): s = 1 / (1 + e), e = 2^q,
// q = -2 log2(e) z (the exponent's scale folded into z's constants).
struct GeluTanh {
  static __device__ __forceinline__ float exponent(float v, float v2) {
    constexpr float kScale = -2.0f * kLog2e * kSqrt2OverPi;
    return v * fmaf(kScale * kGeluCubic, v2, kScale);
  }
  // Past v ~ 1.8e19, q is -inf: e is 0 and y is v (inf stays inf).
  static __device__ __forceinline__ float forward(float v) {
    v = gelu_input(v);
    return v * fast_reciprocal(1.0f + fast_exp2(exponent(v, v * v)));
  }
  // d/dv [v s] = s + 2 z' (v s)(1 - s), and 1 - s = e s, so no term cancels. |v| is clamped to 9,
  // where the derivative is already 1 or below 1e-26 in fp32: further out e heads for overflow and
  // e s for inf * 0.
  static __device__ __forceinline__ float derivative(float v) {
    float g;
    forward_and_derivative(v, g);
    return g;
  }
  // One exponential and one reciprocal for both, from w = v clamped to [-9, 9]. Beyond 9, s is 1
  // exactly in fp32 (e < 2^-95), so v s is v there, inf included; below -9 the forward is under
  // 1e-26 in magnitude, where gelu_input(v) s(-9) stands for it. A NaN stays NaN.
  static __device__ __forceinline__ float forward_and_derivative(float v, float& g) {
    const float w = min_nan(max_nan(v, -9.0f), 9.0f), w2 = w * w;
    const float e = fast_exp2(exponent(w, w2));
    const float s = fast_reciprocal(1.0f + e);
    const float two_dz = fmaf(6.0f * kSqrt2OverPi * kGeluCubic, w2, 2.0f * kSqrt2OverPi);
    g = fmaf(two_dz * (w * s), e * s, s);
    return gelu_input(v) * s;
  }
};

// GELU (erf) = v Phi(v), Phi the normal CDF. With fp32 outputs Phi comes from erff (2 ulps, about
// 40 instructions, branch-free on sm_90). With bf16 or fp16 outputs those 40 instructions held the
// forward to 93-95% of the copy rate (the flat kernel must turn about 2.9 elements per clock per SM
// there), so Phi comes from Numerical Recipes' erfc instead (Press et al., 2nd ed., section 6.2:
// erfc z = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), P of degree 9, fractional error below 1.2e-7 for
// every z >= 0) with MUFU.RCP and MUFU.EX2, about 20 instructions. Emulated in fp32 over
// [-20, 20], y stays within 2.7 u (|y| + |v|) of the exact value (inside the check's 8 u, with
// room for the two MUFUs' ulps) and within 1e-5 relative where |v| < 12: below bf16's and fp16's
// own rounding by 50x or more, but not erff's 2 ulps, hence erff for fp32.
template <bool kSfu>
struct GeluErf {
  static __device__ __forceinline__ float cdf(float v) {
    if constexpr (!kSfu) {
      return 0.5f * (1.0f + erff(v * kSqrtHalf));
    } else {
      const float w = fabsf(v);  // z = w / sqrt 2
      const float t = fast_reciprocal(fmaf(0.5f * kSqrtHalf, w, 1.0f));
      // Numerical Recipes' P (Horner, highest power first) times log2(e), since it feeds ex2, less
      // 1 in the constant term: 2^-1 halves erfc, Phi(-|v|) = erfc(z) / 2.
      const auto c = [](double nr) { return static_cast<float>(nr * kLog2e); };
      float p = c(0.17087277);
      p = fmaf(p, t, c(-0.82215223));
      p = fmaf(p, t, c(1.48851587));
      p = fmaf(p, t, c(-1.13520398));
      p = fmaf(p, t, c(0.27886807));
      p = fmaf(p, t, c(-0.18628806));
      p = fmaf(p, t, c(0.09678418));
      p = fmaf(p, t, c(0.37409196));
      p = fmaf(p, t, c(1.00002368));
      p = fmaf(p, t, c(-1.26551223) - 1.0f);
      const float tail = t * fast_exp2(fmaf(-0.5f * kLog2e * w, w, p));  // Phi(-|v|); 0 for w inf
      return v > 0.0f ? 1.0f - tail : tail;                              // a NaN stays NaN
    }
  }
  static __device__ __forceinline__ float forward(float v) {
    v = gelu_input(v);
    return v * cdf(v);
  }
  // Phi(v) + v phi(v); v * v overflows to inf for huge v, and exp(-inf) = 0 keeps the product 0.
  static __device__ __forceinline__ float derivative(float v) {
    return fmaf(v * kInvSqrt2Pi, __expf(-0.5f * v * v), cdf(v));
  }
  static __device__ __forceinline__ float forward_and_derivative(float v, float& g) {
    const float phi = cdf(v);
    g = fmaf(v * kInvSqrt2Pi, __expf(-0.5f * v * v), phi);
    return gelu_input(v) * phi;
  }
};

// SiLU = v s with s = sigmoid(v) = 1 / (1 + e), e = 2^(-log2(e) v): one exponential and one
// reciprocal. Below kSiluFloor v is raised to it, as GELU's input is: -inf gives -0 (SiLU(-100) is
// -3.7e-42) rather than -inf * 0 = NaN.
inline constexpr float kSiluFloor = -100.0f;

struct Silu {
  // Past v ~ 88, e is 0 and y is v (inf stays inf). A NaN stays NaN.
  static __device__ __forceinline__ float forward(float v) {
    v = max_nan(v, kSiluFloor);
    return v * fast_reciprocal(1.0f + fast_exp2(-kLog2e * v));
  }
  // s + v s (1 - s), from w = v clamped to [-80, 80], where it is already 1 or within 2e-33 of 0.
  static __device__ __forceinline__ float derivative(float v) {
    float g;
    forward_and_derivative(v, g);
    return g;
  }
  // With 1 - s = e s: g = s + (w s)(e s), no term cancelling; |w| <= 80 keeps e finite and s
  // normal. Beyond 80, s is 1 exactly in fp32, so v s is v there; below -80, |v s(-80)| < 2e-33
  // stands for the forward.
  static __device__ __forceinline__ float forward_and_derivative(float v, float& g) {
    const float w = min_nan(max_nan(v, -80.0f), 80.0f);
    const float e = fast_exp2(-kLog2e * w);
    const float s = fast_reciprocal(1.0f + e);
    g = fmaf(w * s, e * s, s);
    return max_nan(v, kSiluFloor) * s;
  }
};

// Calls launch(Act{}) with the activation's functor type, for a kernel templated on it and on
// the element type T.
template <typename T, typename Launch>
void with_activation(Activation activation, Launch&& launch) {
  switch (activation) {
    case Activation::relu: launch(Relu{}); return;
    case Activation::gelu_tanh: launch(GeluTanh{}); return;
    case Activation::gelu_erf: launch(GeluErf<sizeof(T) == 2>{}); return;
    case Activation::silu: launch(Silu{}); return;
  }
  CUDALAB_REQUIRE(false, "bias_act: activation must be " + activation_values());
}

// ---- V consecutive elements as one access ------------------------------------------------------

// Elements per 16-byte vector: 4 fp32, 8 fp16 or bf16.
template <typename T>
inline constexpr int kVectorWidth = static_cast<int>(16 / sizeof(T));

// What a 16-byte vector of T holds as words: floats, or pairs of 16-bit values (converted two at a
// time, one instruction per pair).
template <typename T>
struct WordOf {
  using type = Pair<T>;
};
template <>
struct WordOf<float> {
  using type = float;
};
template <typename T>
using Word = typename WordOf<T>::type;

// V consecutive elements of T moved by one load or store: a 16-byte vector (V = kVectorWidth<T>,
// the address 16-byte aligned) or a single element (V = 1).
template <typename T, int V>
using Elements = std::conditional_t<V == 1, T, Vector16<Word<T>>>;

template <int V, typename T>
__device__ __forceinline__ Elements<T, V> load_elements(const T* p) {
  static_assert(V == 1 || V == kVectorWidth<T>, "one element or one 16-byte vector");
  if constexpr (V == 1) {
    return *p;
  } else {
    return load_vector16(reinterpret_cast<const Word<T>*>(p));
  }
}

template <int V, typename T>
__device__ __forceinline__ void store_elements(T* p, const Elements<T, V>& e) {
  if constexpr (V == 1) {
    *p = e;
  } else {
    store_vector16(reinterpret_cast<Word<T>*>(p), e);
  }
}

// The elements widened to fp32.
template <int V, typename T>
__device__ __forceinline__ void widen(const Elements<T, V>& e, float (&out)[V]) {
  if constexpr (V == 1) {
    out[0] = to_float(e);
  } else if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = e[k];
  } else {
#pragma unroll
    for (int k = 0; k < V / 2; ++k) {
      const float2 f = Conversion<T, float>::two(e[k]);
      out[2 * k] = f.x;
      out[2 * k + 1] = f.y;
    }
  }
}

// fp32 values rounded (to nearest even) to V elements of T.
template <int V, typename T>
__device__ __forceinline__ Elements<T, V> narrow(const float (&in)[V]) {
  Elements<T, V> e;
  if constexpr (V == 1) {
    e = from_float<T>(in[0]);
  } else if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int k = 0; k < V; ++k) e[k] = in[k];
  } else {
#pragma unroll
    for (int k = 0; k < V / 2; ++k) e[k] = Conversion<float, T>::two(make_float2(in[2 * k], in[2 * k + 1]));
  }
  return e;
}

template <int V, typename T>
__device__ __forceinline__ void load_as_float(const T* p, float (&out)[V]) {
  widen<V, T>(load_elements<V>(p), out);
}

template <int V, typename T>
__device__ __forceinline__ void store_as(T* p, const float (&in)[V]) {
  store_elements<V, T>(p, narrow<V, T>(in));
}

}  // namespace cudalab::bias_act_variants
