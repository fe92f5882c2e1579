// The SwiGLU ops: `swiglu` (y = silu(gate) * up) and `swiglu_backward` (dgate, dup), over
// [rows, features] in f32, bf16 and f16. Their tensors, double-precision checks, work models and
// ladders (the one-element and the vectorized rung) beside unfused passes as the baseline.
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

struct ForwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    return {tensors.data<T>("gate"), tensors.data<T>("up"), tensors.data<T>("y"), elements(problem),
            tensors.workspace()};
  }
};

struct BackwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    return {tensors.data<T>("gate"), tensors.data<T>("up"), tensors.data<T>("dy"), tensors.data<T>("dgate"),
            tensors.data<T>("dup"),  elements(problem),     tensors.workspace()};
  }
};

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

Comparison check_forward(const CheckContext& c) {
  const Tensor& gate = c.tensors["gate"];
  const Tensor& up = c.tensors["up"];
  const RoundedOutput y{c.tensors["y"]};
  return compare_elements(elements(c.problem), Tolerance{y.unit, y.absolute},
                          [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
                            for (std::int64_t i = begin; i < end; ++i) {
                              const double g = gate.host_value(i), u = up.host_value(i);
                              const double ref = g * sigmoid(g) * u;
                              y.add(b, i, ref, kEvaluation * kFp32Unit * std::fabs(ref));
                            }
                          });
}

// dgate's factor 1 + g (1 - s) cancels near g = -1.28 (where silu's slope is 0): its error is
// relative to 1 + |g (1 - s)|, not to the factor.
Comparison check_backward(const CheckContext& c) {
  const Tensor& gate = c.tensors["gate"];
  const Tensor& up = c.tensors["up"];
  const Tensor& dy = c.tensors["dy"];
  const RoundedOutput dgate{c.tensors["dgate"]};
  const RoundedOutput dup{c.tensors["dup"]};
  const std::int64_t n = elements(c.problem);
  // One comparison over both outputs: dgate's elements first, then dup's at n + i.
  return compare_elements(2 * n, Tolerance{dgate.unit, dgate.absolute},
                          [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
                            for (std::int64_t k = begin; k < end; ++k) {
                              const std::int64_t i = k < n ? k : k - n;
                              const double g = gate.host_value(i), u = up.host_value(i), d = dy.host_value(i);
                              const double s = sigmoid(g);
                              if (k < n) {
                                const double scale = std::fabs(d * u * s);
                                const double ref = d * u * s * (1 + g * (1 - s));
                                dgate.add(b, i, ref, kEvaluation * kFp32Unit * scale * (1 + std::fabs(g * (1 - s))));
                              } else {
                                const double ref = d * g * s;
                                dup.add(b, i, ref, kEvaluation * kFp32Unit * std::fabs(ref));
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
Variant baseline(const char* technique, Launch launch) {
  Variant b = make_variant<Binding, ArgsOf>("unfused", technique, Role::baseline, Elements{}, launch);
  b.workspace_bytes = [](const Problem& p) { return v::workspace_bytes(elements(p)); };
  return b;
}

}  // namespace

void register_swiglu(Registry& registry) {
  Op forward = swiglu_op("swiglu", "y = silu(gate) * up, element-wise (a Llama MLP's gate), fp32 inside");
  forward.tensors = {{"gate", TensorRole::input, {}, elements},
                     {"up", TensorRole::input, {}, elements},
                     {"y", TensorRole::output, {}, elements}};
  // Read gate and up, write y; per element an exp, an add, a division and two products.
  forward.work = [](const Problem& p) {
    const double n = static_cast<double>(elements(p)), size = static_cast<double>(size_of(p.dtype));
    return Work{2 * size * n, size * n, 5 * n};
  };
  forward.check = check_forward;
  forward.variants = {
      baseline<ForwardBinding, v::SwigluArgs>("unfused passes: silu(gate) to an fp32 array, then the product",
                                              CUDALAB_LAUNCHER(v::unfused)),
      variant<ForwardBinding, v::SwigluArgs>("scalar", "one element per thread", CUDALAB_LAUNCHER(v::scalar)),
      variant<ForwardBinding, v::SwigluArgs>("vectorized",
                                             "16-byte accesses, 16 elements of each array per thread in flight",
                                             CUDALAB_LAUNCHER(v::vectorized)),
  };
  registry.add(std::move(forward));

  Op backward =
      swiglu_op("swiglu_backward", "dgate = dy * up * silu'(gate), dup = dy * silu(gate), element-wise, fp32 inside");
  backward.tensors = {{"gate", TensorRole::input, {}, elements},
                      {"up", TensorRole::input, {}, elements},
                      {"dy", TensorRole::input, {}, elements},
                      {"dgate", TensorRole::output, {}, elements},
                      {"dup", TensorRole::output, {}, elements}};
  // Read gate, up and dy, write dgate and dup; per element an exp, an add, a division and about
  // nine products and sums.
  backward.work = [](const Problem& p) {
    const double n = static_cast<double>(elements(p)), size = static_cast<double>(size_of(p.dtype));
    return Work{3 * size * n, 2 * size * n, 12 * n};
  };
  backward.check = check_backward;
  backward.variants = {
      baseline<BackwardBinding, v::SwigluBackwardArgs>(
          "unfused passes: silu(gate) and silu'(gate) * up to an fp32 array, each times dy",
          CUDALAB_LAUNCHER(v::backward_unfused)),
      variant<BackwardBinding, v::SwigluBackwardArgs>("scalar", "one element per thread",
                                                      CUDALAB_LAUNCHER(v::backward_scalar)),
      variant<BackwardBinding, v::SwigluBackwardArgs>(
          "vectorized", "16-byte accesses, 16 elements of each array per thread in flight",
          CUDALAB_LAUNCHER(v::backward_vectorized)),
  };
  registry.add(std::move(backward));
}

}  // namespace cudalab::harness
