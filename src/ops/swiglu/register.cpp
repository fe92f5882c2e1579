// The gated-unit ops: `swiglu` (y = silu(gate) * up), `geglu` (y = gelu_tanh(gate) * up) and their
// backwards (dgate, dup), over [rows, features] in f32, bf16 and f16. Their tensors,
// double-precision checks, work models and ladders (the one-element and the vectorized rung)
// beside unfused passes as the baseline.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cudalab/swiglu.hpp"
#include "harness/registry.hpp"
#include "ops/swiglu/variants.hpp"

namespace cudalab::harness {
namespace {

namespace v = swiglu_variants;
using Elements = SwigluElements;

constexpr double kFp32Unit = 0x1p-24;
// fp32 evaluation error, in units of kFp32Unit: expf (2 ulps), the add and the division, then the
// products, with room to spare.
constexpr double kEvaluation = 16;

std::int64_t elements(const Problem& p) { return p.dim("rows") * p.dim("features"); }

template <v::GluActivation kActivation>
struct ForwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args{tensors.data<T>("gate"), tensors.data<T>("up"), tensors.data<T>("y"), elements(problem),
              tensors.workspace()};
    args.activation = kActivation;
    return args;
  }
};

template <v::GluActivation kActivation>
struct BackwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args{tensors.data<T>("gate"), tensors.data<T>("up"), tensors.data<T>("dy"), tensors.data<T>("dgate"),
              tensors.data<T>("dup"),  elements(problem),     tensors.workspace()};
    args.activation = kActivation;
    return args;
  }
};

// An activation in double: its value and slope at g, and the magnitudes their fp32 evaluation errs
// against (kEvaluation units of each).
struct Activation {
  double value, slope, value_scale, slope_scale;
};

// silu's slope s (1 + g (1 - s)) cancels near g = -1.28 (where it is 0): its error is relative to
// s (1 + |g (1 - s)|), not to the slope.
Activation silu(double g) {
  const double s = 1.0 / (1.0 + std::exp(-g));
  return {g * s, s * (1 + g * (1 - s)), std::fabs(g * s), s * (1 + std::fabs(g * (1 - s)))};
}

// GELU's tanh form. 1 + t cancels for a gate far below zero and 1 - t^2 wherever |t| nears 1, so
// each error is relative to its terms' magnitudes, not to the result: 1 - t^2 errs by a few units
// of 1 (tanhf's and the subtraction's), times the slope term's growth. Where t rounds to +-1 in
// double, fp32 has rounded it there too and the term is exactly 0 in both.
Activation gelu_tanh(double g) {
  constexpr double kScale = 0.7978845608028654, kCubic = 0.044715;
  const double t = std::tanh(kScale * (g + kCubic * g * g * g)), flat = 1 - t * t;
  const double growth = 0.5 * g * kScale * (1 + 3 * kCubic * g * g);
  const double tail = flat == 0 ? 0 : growth * flat;
  const double tail_scale = flat == 0 ? 0 : std::fabs(growth) * (flat + 2);
  // Where t is -1 in double it is -1 in fp32 too (fp32 saturates first): 1 + t is 0 in both.
  const double rise = 1 + t == 0 ? 0 : 1 + std::fabs(t);
  return {0.5 * g * (1 + t), 0.5 * (1 + t) + tail, 0.5 * std::fabs(g) * rise, 0.5 * rise + tail_scale};
}

// y = act(gate) * up against the double reference.
template <Activation (*kAct)(double)>
Comparison check_forward(const CheckContext& c) {
  const Tensor& gate = c.tensors["gate"];
  const Tensor& up = c.tensors["up"];
  const RoundedOutput y{c.tensors["y"]};
  return compare_elements(elements(c.problem), Tolerance{y.unit, y.absolute},
                          [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
                            for (std::int64_t i = begin; i < end; ++i) {
                              const double u = up.host_value(i);
                              const Activation a = kAct(gate.host_value(i));
                              y.add(b, i, a.value * u, kEvaluation * kFp32Unit * a.value_scale * std::fabs(u));
                            }
                          });
}

// dgate = dy * up * act'(gate) and dup = dy * act(gate) against the double reference.
template <Activation (*kAct)(double)>
Comparison check_backward(const CheckContext& c) {
  const Tensor& gate = c.tensors["gate"];
  const Tensor& up = c.tensors["up"];
  const Tensor& dy = c.tensors["dy"];
  const RoundedOutput dgate{c.tensors["dgate"]};
  const RoundedOutput dup{c.tensors["dup"]};
  const std::int64_t n = elements(c.problem);
  // One comparison over both outputs: dgate's elements first, then dup's at n + i.
  return compare_elements(
      2 * n, Tolerance{dgate.unit, dgate.absolute}, [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
        for (std::int64_t k = begin; k < end; ++k) {
          const std::int64_t i = k < n ? k : k - n;
          const double u = up.host_value(i), d = dy.host_value(i);
          const Activation a = kAct(gate.host_value(i));
          if (k < n) {
            dgate.add(b, i, d * u * a.slope, kEvaluation * kFp32Unit * std::fabs(d * u) * a.slope_scale);
          } else {
            dup.add(b, i, d * a.value, kEvaluation * kFp32Unit * std::fabs(d) * a.value_scale);
          }
        }
      });
}

// Llama MLP shapes: tokens x intermediate size (Llama 2 7B: 11008, Llama 3 8B: 14336, Llama 3 70B:
// 28672), for a 4096-token batch and a decode step of 64 tokens.
Op swiglu_op(const char* name, const char* summary) {
  Op op;
  op.name = name;
  op.summary = summary;
  op.dim_names = {"rows", "features"};
  op.dtypes = dtypes_of(Elements{});
  op.bench_problems = cross(op, {{4096, 11008}, {4096, 14336}, {4096, 28672}, {64, 14336}}, {DType::bf16, DType::f32});
  // One element; tails past the last 16-byte vector (7, 31, 4097 elements a row); a row of a real
  // layer; and one large problem (2^24 + elements, more blocks than the GPU holds at once).
  op.test_problems = cross(op, {{1, 1}, {1, 7}, {3, 31}, {300, 1000}, {2, 4097}, {64, 11008}, {4099, 4097}}, op.dtypes);
  return op;
}

template <typename Binding, template <typename> class ArgsOf, typename Launch>
Variant variant(const char* id, const char* technique, Launch launch) {
  return make_variant<Binding, ArgsOf>(id, technique, Role::ladder, Elements{}, launch);
}

template <typename Binding, template <typename> class ArgsOf, typename Launch>
Variant baseline(const std::string& technique, Launch launch) {
  Variant b = make_variant<Binding, ArgsOf>("unfused", technique, Role::baseline, Elements{}, launch);
  b.workspace_bytes = [](const Problem& p) { return v::workspace_bytes(elements(p)); };
  return b;
}

// One gated unit's two ops: their names and summaries, the activation as the baselines'
// techniques name it, and their checks.
struct GatedUnit {
  const char* forward_name;
  const char* forward_summary;
  const char* backward_name;
  const char* backward_summary;
  const char* activation;
  Comparison (*forward_check)(const CheckContext&);
  Comparison (*backward_check)(const CheckContext&);
};

template <v::GluActivation kActivation>
void register_gated(Registry& registry, const GatedUnit& unit) {
  using Forward = ForwardBinding<kActivation>;
  using Backward = BackwardBinding<kActivation>;
  const std::string act = unit.activation;
  Op forward = swiglu_op(unit.forward_name, unit.forward_summary);
  forward.tensors = {{"gate", TensorRole::input, {}, elements},
                     {"up", TensorRole::input, {}, elements},
                     {"y", TensorRole::output, {}, elements}};
  // Read gate and up, write y; per element an exp (or a tanh), an add, a division and two products.
  forward.work = [](const Problem& p) {
    const double n = static_cast<double>(elements(p)), size = static_cast<double>(size_of(p.dtype));
    return Work{2 * size * n, size * n, 5 * n};
  };
  forward.check = unit.forward_check;
  forward.variants = {
      baseline<Forward, v::SwigluArgs>("unfused passes: " + act + "(gate) to an fp32 array, then the product",
                                       CUDALAB_LAUNCHER(v::unfused)),
      variant<Forward, v::SwigluArgs>("scalar", "one element per thread", CUDALAB_LAUNCHER(v::scalar)),
      variant<Forward, v::SwigluArgs>("vectorized", "16-byte accesses, 16 elements of each array per thread in flight",
                                      CUDALAB_LAUNCHER(v::vectorized)),
  };
  registry.add(std::move(forward));

  Op backward = swiglu_op(unit.backward_name, unit.backward_summary);
  backward.tensors = {{"gate", TensorRole::input, {}, elements},
                      {"up", TensorRole::input, {}, elements},
                      {"dy", TensorRole::input, {}, elements},
                      {"dgate", TensorRole::output, {}, elements},
                      {"dup", TensorRole::output, {}, elements}};
  // Read gate, up and dy, write dgate and dup; per element an exp (or a tanh), an add, a division
  // and about nine products and sums.
  backward.work = [](const Problem& p) {
    const double n = static_cast<double>(elements(p)), size = static_cast<double>(size_of(p.dtype));
    return Work{3 * size * n, 2 * size * n, 12 * n};
  };
  backward.check = unit.backward_check;
  backward.variants = {
      baseline<Backward, v::SwigluBackwardArgs>(
          "unfused passes: " + act + "(gate) and " + act + "'(gate) * up to an fp32 array, each times dy",
          CUDALAB_LAUNCHER(v::backward_unfused)),
      variant<Backward, v::SwigluBackwardArgs>("scalar", "one element per thread",
                                               CUDALAB_LAUNCHER(v::backward_scalar)),
      variant<Backward, v::SwigluBackwardArgs>("vectorized",
                                               "16-byte accesses, 16 elements of each array per thread in flight",
                                               CUDALAB_LAUNCHER(v::backward_vectorized)),
  };
  registry.add(std::move(backward));
}

}  // namespace

void register_swiglu(Registry& registry) {
  register_gated<v::GluActivation::silu>(
      registry, {"swiglu", "y = silu(gate) * up, element-wise (a Llama MLP's gate), fp32 inside", "swiglu_backward",
                 "dgate = dy * up * silu'(gate), dup = dy * silu(gate), element-wise, fp32 inside", "silu",
                 check_forward<silu>, check_backward<silu>});
  register_gated<v::GluActivation::gelu_tanh>(
      registry, {"geglu", "y = gelu(gate) * up with GELU's tanh form, element-wise (a Gemma MLP's gate), fp32 inside",
                 "geglu_backward", "dgate = dy * up * gelu'(gate), dup = dy * gelu(gate), element-wise, fp32 inside",
                 "gelu", check_forward<gelu_tanh>, check_backward<gelu_tanh>});
}

}  // namespace cudalab::harness
