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

// The two layouts of the problem's gate and up: their own tensors (flat), or the halves of one x
// [rows, 2 * features] (packed), whose row r holds gate's features columns, then up's.
template <bool kPacked>
struct Layout {
  static constexpr const char* kGate = kPacked ? "x" : "gate";
  static constexpr const char* kUp = kPacked ? "x" : "up";
  static constexpr const char* kDgate = kPacked ? "dx" : "dgate";
  static constexpr const char* kDup = kPacked ? "dx" : "dup";
  // Where element i of rows x features lies in gate's (and dgate's) tensor, and in up's.
  static std::int64_t gate_at(const Problem& p, std::int64_t i) {
    if constexpr (kPacked) {
      const std::int64_t f = p.dim("features");
      return i / f * 2 * f + i % f;
    } else {
      return i;
    }
  }
  static std::int64_t up_at(const Problem& p, std::int64_t i) {
    return kPacked ? gate_at(p, i) + p.dim("features") : i;
  }
  template <typename Args>
  static void set_rows(const Problem& p, Args& args) {
    if constexpr (kPacked) args.rows = {p.dim("features"), 2 * p.dim("features")};
  }
};

template <v::GluActivation kActivation, bool kPacked>
struct ForwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    using L = Layout<kPacked>;
    Args args;
    args.gate = tensors.data<T>(L::kGate);
    args.up = tensors.data<T>(L::kUp) + L::up_at(problem, 0);
    args.y = tensors.data<T>("y");
    args.n = elements(problem);
    args.workspace = tensors.workspace();
    args.activation = kActivation;
    L::set_rows(problem, args);
    return args;
  }
};

template <v::GluActivation kActivation, bool kPacked>
struct BackwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    using L = Layout<kPacked>;
    const std::int64_t up = L::up_at(problem, 0);
    Args args;
    args.gate = tensors.data<T>(L::kGate);
    args.up = tensors.data<T>(L::kUp) + up;
    args.dy = tensors.data<T>("dy");
    args.dgate = tensors.data<T>(L::kDgate);
    args.dup = tensors.data<T>(L::kDup) + up;
    args.n = elements(problem);
    args.workspace = tensors.workspace();
    args.activation = kActivation;
    L::set_rows(problem, args);
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
template <Activation (*kAct)(double), bool kPacked>
Comparison check_forward(const CheckContext& c) {
  using L = Layout<kPacked>;
  const Tensor& gate = c.tensors[L::kGate];
  const Tensor& up = c.tensors[L::kUp];
  const RoundedOutput y{c.tensors["y"]};
  return compare_elements(elements(c.problem), Tolerance{y.unit, y.absolute},
                          [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
                            for (std::int64_t i = begin; i < end; ++i) {
                              const double u = up.host_value(L::up_at(c.problem, i));
                              const Activation a = kAct(gate.host_value(L::gate_at(c.problem, i)));
                              y.add(b, i, a.value * u, kEvaluation * kFp32Unit * a.value_scale * std::fabs(u));
                            }
                          });
}

// dgate = dy * up * act'(gate) and dup = dy * act(gate) against the double reference.
template <Activation (*kAct)(double), bool kPacked>
Comparison check_backward(const CheckContext& c) {
  using L = Layout<kPacked>;
  const Tensor& gate = c.tensors[L::kGate];
  const Tensor& up = c.tensors[L::kUp];
  const Tensor& dy = c.tensors["dy"];
  const RoundedOutput dgate{c.tensors[L::kDgate]};
  const RoundedOutput dup{c.tensors[L::kDup]};
  const std::int64_t n = elements(c.problem);
  // One comparison over both outputs: dgate's elements first, then dup's at n + i.
  return compare_elements(
      2 * n, Tolerance{dgate.unit, dgate.absolute}, [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
        for (std::int64_t k = begin; k < end; ++k) {
          const std::int64_t i = k < n ? k : k - n;
          const std::int64_t g_at = L::gate_at(c.problem, i), u_at = L::up_at(c.problem, i);
          const double u = up.host_value(u_at), d = dy.host_value(i);
          const Activation a = kAct(gate.host_value(g_at));
          if (k < n) {
            dgate.add(b, g_at, d * u * a.slope, kEvaluation * kFp32Unit * std::fabs(d * u) * a.slope_scale);
          } else {
            dup.add(b, u_at, d * a.value, kEvaluation * kFp32Unit * std::fabs(d) * a.value_scale);
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

// One gated unit's two ops: the forward's name (the backward's adds _backward) and their summaries, the activation as
// the baselines' techniques name it, and their checks (flat and packed).
struct GatedUnit {
  const char* forward_name;
  const char* forward_summary;
  const char* backward_summary;
  const char* activation;
  Comparison (*forward_check)(const CheckContext&);
  Comparison (*backward_check)(const CheckContext&);
  Comparison (*packed_forward_check)(const CheckContext&);
  Comparison (*packed_backward_check)(const CheckContext&);
};

std::int64_t packed_elements(const Problem& p) { return 2 * elements(p); }

// The unit's forward and backward ops, flat (gate and up tensors) or packed (<name>_packed: one x
// [rows, 2 * features]; the backward's dx in x's layout).
template <v::GluActivation kActivation, bool kPacked>
void register_gated_ops(Registry& registry, const GatedUnit& unit) {
  using Forward = ForwardBinding<kActivation, kPacked>;
  using Backward = BackwardBinding<kActivation, kPacked>;
  const std::string act = unit.activation, suffix = kPacked ? "_packed" : "";
  const std::string packed_note =
      kPacked ? "; gate and up the two halves of one x [rows, 2 * features], a fused projection's output" : "";
  Op forward = swiglu_op((unit.forward_name + suffix).c_str(), unit.forward_summary);
  forward.summary += packed_note;
  if constexpr (kPacked) {
    forward.tensors = {{"x", TensorRole::input, {}, packed_elements}, {"y", TensorRole::output, {}, elements}};
  } else {
    forward.tensors = {{"gate", TensorRole::input, {}, elements},
                       {"up", TensorRole::input, {}, elements},
                       {"y", TensorRole::output, {}, elements}};
  }
  // Read gate and up, write y; per element an exp (or a tanh), an add, a division and two products.
  forward.work = [](const Problem& p) {
    const double n = static_cast<double>(elements(p)), size = static_cast<double>(size_of(p.dtype));
    return Work{2 * size * n, size * n, 5 * n};
  };
  forward.check = kPacked ? unit.packed_forward_check : unit.forward_check;
  forward.variants = {
      baseline<Forward, v::SwigluArgs>("unfused passes: " + act + "(gate) to an fp32 array, then the product",
                                       CUDALAB_LAUNCHER(v::unfused)),
      variant<Forward, v::SwigluArgs>("scalar", "one element per thread", CUDALAB_LAUNCHER(v::scalar)),
      variant<Forward, v::SwigluArgs>("vectorized", "16-byte accesses, 16 elements of each array per thread in flight",
                                      CUDALAB_LAUNCHER(v::vectorized)),
  };
  registry.add(std::move(forward));

  Op backward = swiglu_op((unit.forward_name + suffix + "_backward").c_str(), unit.backward_summary);
  backward.summary += packed_note;
  if constexpr (kPacked) {
    backward.tensors = {{"x", TensorRole::input, {}, packed_elements},
                        {"dy", TensorRole::input, {}, elements},
                        {"dx", TensorRole::output, {}, packed_elements}};
  } else {
    backward.tensors = {{"gate", TensorRole::input, {}, elements},
                        {"up", TensorRole::input, {}, elements},
                        {"dy", TensorRole::input, {}, elements},
                        {"dgate", TensorRole::output, {}, elements},
                        {"dup", TensorRole::output, {}, elements}};
  }
  // Read gate, up and dy, write dgate and dup; per element an exp (or a tanh), an add, a division
  // and about nine products and sums.
  backward.work = [](const Problem& p) {
    const double n = static_cast<double>(elements(p)), size = static_cast<double>(size_of(p.dtype));
    return Work{3 * size * n, 2 * size * n, 12 * n};
  };
  backward.check = kPacked ? unit.packed_backward_check : unit.backward_check;
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

template <v::GluActivation kActivation>
void register_gated(Registry& registry, const GatedUnit& unit) {
  register_gated_ops<kActivation, false>(registry, unit);
  register_gated_ops<kActivation, true>(registry, unit);
}

}  // namespace

void register_swiglu(Registry& registry) {
  register_gated<v::GluActivation::silu>(
      registry,
      {"swiglu", "y = silu(gate) * up, element-wise (a Llama MLP's gate), fp32 inside",
       "dgate = dy * up * silu'(gate), dup = dy * silu(gate), element-wise, fp32 inside", "silu",
       check_forward<silu, false>, check_backward<silu, false>, check_forward<silu, true>, check_backward<silu, true>});
  register_gated<v::GluActivation::gelu_tanh>(
      registry, {"geglu", "y = gelu(gate) * up with GELU's tanh form, element-wise (a Gemma MLP's gate), fp32 inside",
                 "dgate = dy * up * gelu'(gate), dup = dy * gelu(gate), element-wise, fp32 inside", "gelu",
                 check_forward<gelu_tanh, false>, check_backward<gelu_tanh, false>, check_forward<gelu_tanh, true>,
                 check_backward<gelu_tanh, true>});
}

}  // namespace cudalab::harness
