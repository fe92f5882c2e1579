// The AdamW op: one optimizer step over a list of parameter tensors in f32, bf16 and f16, the
// tensors laid end to end in one array per role (parameters, gradients, moments). Its tensors,
// the double-precision check, the work model and the ladder.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cudalab/adamw.hpp"
#include "harness/registry.hpp"
#include "ops/adamw/inputs.hpp"
#include "ops/adamw/variants.hpp"

namespace cudalab::harness {
namespace {

namespace v = adamw_variants;
using Elements = AdamWElements;

constexpr double kFp32Unit = 0x1p-24;
// The step the problems take: a tenth step, so both bias corrections differ from 1.
constexpr AdamWHyperparameters kHyper{1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 10};

// Tensor i's size: `elements`, plus 8 (i % 3) (whole 16-byte vectors of a 16-bit type) or, with
// odd = 1, plus 3 (i % 3) laid end to end (tensors that start and end between vectors).
struct Layout {
  std::vector<std::int64_t> offset, size;
  std::int64_t total = 0;
};
Layout layout_of(const Problem& p) {
  Layout l;
  const std::int64_t step = p.param("odd") != 0 ? 3 : 8;
  for (std::int64_t i = 0; i < p.dim("tensors"); ++i) {
    l.offset.push_back(l.total);
    l.size.push_back(p.dim("elements") + step * (i % 3));
    l.total += l.size.back();
  }
  return l;
}
std::int64_t total_of(const Problem& p) { return layout_of(p).total; }

// The tensors laid out as layout_of says: every array in the dtype, or (kMaster) fp32 master
// weights and moments beside the 16-bit parameters and gradients.
template <bool kMaster>
struct Binding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    using Moment = std::conditional_t<kMaster, float, T>;
    const Layout l = layout_of(problem);
    Args args;
    for (std::size_t i = 0; i < l.size.size(); ++i) {
      const std::int64_t at = l.offset[i];
      T* param = tensors.data<T>("param") + at;
      const T* grad = tensors.data<T>("grad") + at;
      Moment* m = tensors.data<Moment>("exp_avg") + at;
      Moment* v = tensors.data<Moment>("exp_avg_sq") + at;
      if constexpr (kMaster) {
        args.tensors.push_back({param, grad, tensors.data<float>("master") + at, m, v, l.size[i]});
      } else {
        args.tensors.push_back({param, grad, m, v, l.size[i]});
      }
    }
    args.hyper = kHyper;
    if constexpr (kMaster) args.workspace = tensors.workspace();
    return args;
  }
};

// One element's step in double from its initial parameter, moments and gradient, with bounds that
// follow fp32's roundings of each update and, for the parameter, the moments and the decayed
// parameter rounded to `stored_unit` before the update reads them (the baseline's passes store them
// in the dtype first, as torch's foreach steps do).
struct StepReference {
  double p, p_error, m, m_error, v, v_error;
};
// The step's constants, formed once per check rather than per element.
struct StepConstants {
  double b1 = kHyper.beta1, b2 = kHyper.beta2;
  double step_size = kHyper.lr / (1 - std::pow(b1, static_cast<double>(kHyper.step)));
  double inverse_bias2 = 1 / std::sqrt(1 - std::pow(b2, static_cast<double>(kHyper.step)));
  double decay = 1 - static_cast<double>(kHyper.lr) * kHyper.weight_decay;
};
StepReference step_reference(const StepConstants& k, double p0, double m0, double v0, double g, double stored_unit) {
  StepReference r;
  r.m = k.b1 * m0 + (1 - k.b1) * g, r.v = k.b2 * v0 + (1 - k.b2) * g * g;
  r.m_error = 3 * kFp32Unit * (std::fabs(k.b1 * m0) + std::fabs((1 - k.b1) * g));
  r.v_error = 4 * kFp32Unit * (k.b2 * v0 + (1 - k.b2) * g * g);
  const double update = k.step_size * r.m / (std::sqrt(r.v) * k.inverse_bias2 + kHyper.eps);
  const double relative = (r.m_error / std::max(std::fabs(r.m), 1e-300) + stored_unit) +
                          (r.v_error / std::max(r.v, 1e-300) + stored_unit) / 2 + 8 * kFp32Unit;
  r.p = p0 * k.decay - update;
  r.p_error = std::fabs(update) * std::min(relative, 1.0) + (stored_unit + 4 * kFp32Unit) * std::fabs(p0 * k.decay) +
              4 * kFp32Unit * std::fabs(update);
  return r;
}

// Each element's step against step_reference, from the values as generated: one comparison over
// the three outputs, each element's parameter, m and v in turn.
Comparison check(const CheckContext& c) {
  const RoundedOutput param{c.tensors["param"]}, m_out{c.tensors["exp_avg"]}, v_out{c.tensors["exp_avg_sq"]};
  const Tensor& grad = c.tensors["grad"];
  const DType dtype = c.problem.dtype;
  const void* p0 = c.tensors["param"].initial_host();
  const void* m0 = c.tensors["exp_avg"].initial_host();
  const void* v0 = c.tensors["exp_avg_sq"].initial_host();
  const double unit = traits(dtype).unit_roundoff;
  const StepConstants k;
  return compare_elements(total_of(c.problem), Tolerance{param.unit, param.absolute},
                          [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
                            for (std::int64_t i = begin; i < end; ++i) {
                              const StepReference r =
                                  step_reference(k, element_to_double(dtype, p0, i), element_to_double(dtype, m0, i),
                                                 element_to_double(dtype, v0, i), grad.host_value(i), unit);
                              param.add(b, i, r.p, r.p_error);
                              m_out.add(b, i, r.m, r.m_error);
                              v_out.add(b, i, r.v, r.v_error);
                            }
                          });
}

// The mixed-precision step: the fp32 master, m and v, and the 16-bit parameter (the new master
// rounded once), from the fp32 initial values; nothing is stored between passes. One comparison
// over the four outputs, each element's parameter, master weight, m and v in turn.
Comparison check_master(const CheckContext& c) {
  const RoundedOutput param{c.tensors["param"]}, master{c.tensors["master"]};
  const RoundedOutput m_out{c.tensors["exp_avg"]}, v_out{c.tensors["exp_avg_sq"]};
  const Tensor& grad = c.tensors["grad"];
  const auto* master0 = static_cast<const float*>(c.tensors["master"].initial_host());
  const auto* m0 = static_cast<const float*>(c.tensors["exp_avg"].initial_host());
  const auto* v0 = static_cast<const float*>(c.tensors["exp_avg_sq"].initial_host());
  const StepConstants k;
  return compare_elements(total_of(c.problem), Tolerance{param.unit, param.absolute},
                          [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
                            for (std::int64_t i = begin; i < end; ++i) {
                              const StepReference r =
                                  step_reference(k, master0[i], m0[i], v0[i], grad.host_value(i), 0.0);
                              param.add(b, i, r.p, r.p_error);
                              master.add(b, i, r.p, r.p_error);
                              m_out.add(b, i, r.m, r.m_error);
                              v_out.add(b, i, r.v, r.v_error);
                            }
                          });
}

void fill_second_moments(void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem& p,
                         cudaStream_t stream) {
  fill_adamw_second_moments(p.dtype, device, count, seed, stream);
}

void fill_fp32_second_moments(void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem&,
                              cudaStream_t stream) {
  fill_adamw_second_moments(DType::f32, device, count, seed, stream);
}

}  // namespace

void register_adamw(Registry& registry) {
  Op op;
  op.name = "adamw";
  op.summary = "one AdamW step (decoupled weight decay) over a list of parameter tensors, fp32 inside";
  op.dim_names = {"tensors", "elements"};
  op.dtypes = dtypes_of(Elements{});
  op.params = {{"odd", 0}};
  // A half-billion-parameter step (112 tensors of 4M values: 470M) and a thousand small tensors
  // (norm weights and biases: launches and tails); tests: one value, tensor sizes past the vectors,
  // more tensors than one launch takes (48), a large tensor.
  op.bench_problems = cross(op, {{112, 4194304}, {1000, 4096}}, {DType::bf16, DType::f32});
  const std::vector<std::vector<std::int64_t>> tests = {{1, 1}, {5, 7}, {50, 1000}, {3, 1048576}};
  op.test_problems = cross(op, tests, op.dtypes) + cross(op, tests, op.dtypes, {{"odd", 1}});
  op.tensors = {{"param", TensorRole::input_output, {}, total_of},
                {"grad", TensorRole::input, {}, total_of},
                {"exp_avg", TensorRole::input_output, {}, total_of},
                {"exp_avg_sq", TensorRole::input_output, {}, total_of, fill_second_moments}};
  // Read p, g, m and v; write p, m and v; about a dozen flops an element.
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(total_of(p)), size = static_cast<double>(size_of(p.dtype));
    return Work{4 * size * n, 3 * size * n, 12 * n};
  };
  op.check = check;
  op.variants = {
      make_variant<Binding<false>, v::AdamWArgs>("unfused",
                                                 "torch's foreach steps: decay, m, v and the update, a pass each",
                                                 Role::baseline, Elements{}, CUDALAB_LAUNCHER(v::unfused)),
      make_variant<Binding<false>, v::AdamWArgs>("per_tensor", "one fused pass per tensor, element accesses",
                                                 Role::ladder, Elements{}, CUDALAB_LAUNCHER(v::per_tensor)),
      make_variant<Binding<false>, v::AdamWArgs>(
          "multi_tensor", "up to 48 tensors a launch, their pointers in the kernel's parameters, 16-byte accesses",
          Role::ladder, Elements{}, CUDALAB_LAUNCHER(v::multi_tensor)),
  };
  registry.add(std::move(op));

  Op master;
  master.name = "adamw_master";
  master.summary =
      "one AdamW step of 16-bit parameters on fp32 master weights and moments, the parameters the new master rounded";
  master.dim_names = {"tensors", "elements"};
  master.dtypes = dtypes_of(AdamWMasterElements{});
  master.params = {{"odd", 0}};
  master.bench_problems = cross(master, {{112, 4194304}, {1000, 4096}}, {DType::bf16});
  master.test_problems = cross(master, tests, master.dtypes) + cross(master, tests, master.dtypes, {{"odd", 1}});
  master.tensors = {{"param", TensorRole::output, {}, total_of},
                    {"grad", TensorRole::input, {}, total_of},
                    {"master", TensorRole::input_output, DType::f32, total_of},
                    {"exp_avg", TensorRole::input_output, DType::f32, total_of},
                    {"exp_avg_sq", TensorRole::input_output, DType::f32, total_of, fill_fp32_second_moments}};
  // Read g (16-bit), the master, m and v (fp32); write p (16-bit), the master, m and v.
  master.work = [](const Problem& p) {
    const double n = static_cast<double>(total_of(p)), size = static_cast<double>(size_of(p.dtype));
    return Work{(size + 12) * n, (size + 12) * n, 12 * n};
  };
  master.check = check_master;
  Variant recipe = make_variant<Binding<true>, v::AdamWMasterArgs>(
      "unfused", "torch's recipe: the gradient cast to fp32, a fused fp32 step on the master, the parameter cast back",
      Role::baseline, AdamWMasterElements{}, CUDALAB_LAUNCHER(v::unfused_master));
  recipe.workspace_bytes = [](const Problem& p) {
    const Layout l = layout_of(p);
    return v::master_workspace_bytes(l.size.empty() ? 0 : *std::max_element(l.size.begin(), l.size.end()));
  };
  master.variants = {
      recipe,
      make_variant<Binding<true>, v::AdamWMasterArgs>(
          "multi_tensor", "up to 48 tensors a launch, 16-byte accesses (two of each fp32 array per 16-bit vector)",
          Role::ladder, AdamWMasterElements{}, CUDALAB_LAUNCHER(v::multi_tensor_master))};
  registry.add(std::move(master));
}

}  // namespace cudalab::harness
