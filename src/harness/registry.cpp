#include "harness/registry.hpp"

#include <algorithm>
#include <set>

#include "cudalab/error.hpp"
#include "harness/claim_catalog.hpp"

namespace cudalab::harness {

// One registration function per op folder (src/ops/<op>/register.cpp, or register.cu where it
// holds device code), listed by the build (cmake/CudalabOp.cmake).
#define CUDALAB_OP(name) void register_##name(Registry& registry);
#include "registered_ops.inc"
#undef CUDALAB_OP

const char* to_string(Role role) {
  switch (role) {
    case Role::ladder: return "ladder";
    case Role::baseline: return "baseline";
    case Role::broken: return "broken";
  }
  return "unknown";
}

const char* to_string(Engine engine) {
  switch (engine) {
    case Engine::cuda_cores: return "cuda_cores";
    case Engine::tensor_cores: return "tensor_cores";
    case Engine::by_dtype: return "by_dtype";
    case Engine::fp8_tensor_cores: return "fp8_tensor_cores";
  }
  return "?";
}

ComputeUnit compute_unit(Engine engine, DType dtype) {
  if (engine == Engine::fp8_tensor_cores) return ComputeUnit::fp8_tensor_cores;  // whatever C's dtype
  if (engine == Engine::by_dtype)
    engine = dtype == DType::bf16 || dtype == DType::f16 ? Engine::tensor_cores : Engine::cuda_cores;
  if (engine == Engine::tensor_cores) {
    switch (dtype) {
      case DType::bf16: return ComputeUnit::bf16_tensor_cores;
      case DType::f16: return ComputeUnit::fp16_tensor_cores;
      default: return ComputeUnit::tf32_tensor_cores;
    }
  }
  if (dtype == DType::f64) return ComputeUnit::fp64_cuda_cores;
  return traits(dtype).is_integer ? ComputeUnit::integer : ComputeUnit::fp32_cuda_cores;
}

bool Variant::supports(DType dtype) const { return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end(); }

std::string why_not(const Variant& variant, const DeviceInfo& device, const Problem& problem) {
  if (!variant.supports(problem.dtype)) return std::string("not implemented for ") + to_string(problem.dtype);
  return variant.can_implement ? variant.can_implement(device, problem) : "";
}

const Variant* Op::find_variant(const std::string& id) const {
  for (const Variant& v : variants)
    if (v.id == id) return &v;
  return nullptr;
}

Problem Op::problem(const std::vector<std::int64_t>& sizes, DType dtype, const std::vector<Param>& overrides) const {
  CUDALAB_REQUIRE(sizes.size() == dim_names.size(), name + " takes " + std::to_string(dim_names.size()) +
                                                        " dimensions, got " + std::to_string(sizes.size()));
  CUDALAB_REQUIRE(std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end(),
                  name + " has no dtype " + to_string(dtype) + " (see `cudalab list`)");
  Problem p;
  p.dtype = dtype;
  for (std::size_t i = 0; i < sizes.size(); ++i) p.dims.push_back({dim_names[i], sizes[i]});
  p.params = params;
  for (const Param& o : overrides) {
    auto it = std::find_if(p.params.begin(), p.params.end(), [&](const Param& q) { return q.name == o.name; });
    CUDALAB_REQUIRE(it != p.params.end(), name + " has no parameter '" + o.name + "'");
    it->value = o.value;
  }
  return p;
}

std::vector<Problem> cross(const Op& op, const std::vector<std::vector<std::int64_t>>& sizes,
                           const std::vector<DType>& dtypes, const std::vector<Param>& params) {
  std::vector<Problem> problems;
  for (DType dtype : dtypes)
    for (const auto& size : sizes) problems.push_back(op.problem(size, dtype, params));
  return problems;
}

std::vector<Problem> row_op_bench_problems(const Op& op, const std::vector<Param>& params) {
  std::vector<Problem> problems = cross(op, {{16384, 8192}}, op.dtypes, params);
  std::vector<std::vector<std::int64_t>> sweep;
  for (const std::int64_t width : {1024, 4096, 16384, 65536, 262144}) sweep.push_back({(1 << 28) / width, width});
  for (const Problem& p : cross(op, sweep, {DType::f32, DType::bf16}, params)) problems.push_back(p);
  return problems;
}

void Registry::add(Op op) {
  const std::string& name = op.name;
  CUDALAB_REQUIRE(!name.empty() && !op.summary.empty(), "registry: an op needs a name and a summary");
  CUDALAB_REQUIRE(find_op(name) == nullptr && find_experiment(name) == nullptr,
                  "registry: the name '" + name + "' is taken");
  CUDALAB_REQUIRE(op.work && op.check, "registry: op '" + name + "' lacks a work model or a check");
  CUDALAB_REQUIRE(!op.dim_names.empty() && !op.dtypes.empty() && !op.tensors.empty(),
                  "registry: op '" + name + "' needs dimensions, dtypes and tensors");
  for (const TensorSpec& t : op.tensors)
    CUDALAB_REQUIRE(!t.name.empty() && t.elements, "registry: a tensor of '" + name + "' lacks a name or a size");
  CUDALAB_REQUIRE(!op.variants.empty(), "registry: op '" + name + "' has no variants");
  for (const auto* problems : {&op.bench_problems, &op.test_problems}) {
    for (const Problem& p : *problems) {
      bool well_formed = p.dims.size() == op.dim_names.size() &&
                         std::find(op.dtypes.begin(), op.dtypes.end(), p.dtype) != op.dtypes.end() &&
                         p.params.size() == op.params.size();
      for (std::size_t i = 0; well_formed && i < p.dims.size(); ++i) well_formed = p.dims[i].name == op.dim_names[i];
      for (std::size_t i = 0; well_formed && i < p.params.size(); ++i)
        well_formed = p.params[i].name == op.params[i].name;
      CUDALAB_REQUIRE(well_formed, "registry: op '" + name + "' lists a problem not of its form: " + p.label());
    }
  }
  for (DType dtype : op.dtypes) {
    const bool tested = std::any_of(op.test_problems.begin(), op.test_problems.end(),
                                    [&](const Problem& p) { return p.dtype == dtype; });
    CUDALAB_REQUIRE(tested, "registry: op '" + name + "' has no test problem of dtype " + to_string(dtype));
  }
  std::set<std::string> ids;
  for (const Variant& v : op.variants) {
    CUDALAB_REQUIRE(!v.id.empty() && !v.technique.empty() && v.bind && !v.dtypes.empty(),
                    "registry: a variant of '" + name + "' lacks an id, technique or launcher");
    CUDALAB_REQUIRE(ids.insert(v.id).second, "registry: variant id '" + v.id + "' appears twice in '" + name + "'");
    for (DType dtype : v.dtypes)
      CUDALAB_REQUIRE(std::find(op.dtypes.begin(), op.dtypes.end(), dtype) != op.dtypes.end(),
                      "registry: variant '" + v.id + "' of '" + name + "' implements dtype " + to_string(dtype) +
                          ", which the op does not list");
  }
  ops_.push_back(std::move(op));
}

void Registry::add(Experiment experiment) {
  CUDALAB_REQUIRE(!experiment.name.empty() && experiment.run, "registry: an experiment needs a name and a body");
  CUDALAB_REQUIRE(find_op(experiment.name) == nullptr && find_experiment(experiment.name) == nullptr,
                  "registry: the name '" + experiment.name + "' is taken");
  experiments_.push_back(std::move(experiment));
}

void Registry::add(ClaimCheck claim) {
  CUDALAB_REQUIRE(!claim.id.empty() && claim.evaluate, "registry: a claim check needs an id and a body");
  CUDALAB_REQUIRE(find_claim_text(claim.id) != nullptr,
                  "registry: claim " + claim.id + " is not in the claims catalog (src/harness/claim_catalog.cpp)");
  for (const ClaimCheck& c : claims_)
    CUDALAB_REQUIRE(c.id != claim.id, "registry: claim '" + claim.id + "' is checked twice");
  CUDALAB_REQUIRE(find_op(claim.page) != nullptr || find_experiment(claim.page) != nullptr ||
                      std::any_of(experiments_.begin(), experiments_.end(),
                                  [&](const Experiment& e) { return e.op == claim.page; }),
                  "registry: claim " + claim.id + " is shown on page '" + claim.page + "', which nothing registers");
  for (const ClaimUse& use : claim.uses) {
    const Op* op = find_op(use.op);
    CUDALAB_REQUIRE(op != nullptr,
                    "registry: claim " + claim.id + " reads op '" + use.op + "', which is not registered");
    CUDALAB_REQUIRE(op->find_variant(use.variant) != nullptr, "registry: claim " + claim.id + " reads variant '" +
                                                                  use.variant + "' of " + use.op +
                                                                  ", which is not registered");
    CUDALAB_REQUIRE(
        std::find(op->bench_problems.begin(), op->bench_problems.end(), use.problem) != op->bench_problems.end(),
        "registry: claim " + claim.id + " reads " + use.op + " at " + use.problem.label() +
            ", which bench does not time");
  }
  claims_.push_back(std::move(claim));
}

const Op* Registry::find_op(const std::string& name) const {
  for (const Op& op : ops_)
    if (op.name == name) return &op;
  return nullptr;
}

const Experiment* Registry::find_experiment(const std::string& name) const {
  for (const Experiment& e : experiments_)
    if (e.name == name) return &e;
  return nullptr;
}

nlohmann::json predicted_points(const std::string& label, const std::vector<std::pair<double, double>>& points) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [x, y] : points) list.push_back({{"x", x}, {"y", y}, {"label", label}});
  return list;
}

nlohmann::json predicted_level(const std::string& label, double y) {
  return nlohmann::json::array({{{"y", y}, {"label", label}}});
}

nlohmann::json bar_plot(const std::string& title, const nlohmann::json& label, const std::string& value,
                        const std::string& value_label) {
  nlohmann::json plot = {{"kind", "bar"}, {"title", title}, {"value", value}, {"value_label", value_label}};
  plot["label"] = label;
  return nlohmann::json::array({plot});
}

nlohmann::json run_experiment(const Experiment& experiment, const ExperimentContext& context) {
  nlohmann::json result = experiment.run(context);
  if (!experiment.plots.empty()) result["plots"] = experiment.plots;
  return result;
}

const Registry& builtin_registry() {
  static const Registry registry = [] {
    Registry r;
#define CUDALAB_OP(name) register_##name(r);
#include "registered_ops.inc"
#undef CUDALAB_OP
    return r;
  }();
  return registry;
}

}  // namespace cudalab::harness
