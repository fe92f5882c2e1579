#include "harness/registry.hpp"

#include <set>

#include "cudalab/error.hpp"

namespace cudalab::harness {

// One registration function per op family (src/ops/<op>/register.cu).
void register_vecadd(Registry& registry);
void register_reduce(Registry& registry);
void register_histogram(Registry& registry);
void register_scan(Registry& registry);
void register_select(Registry& registry);
void register_conv2d(Registry& registry);
void register_transpose(Registry& registry);
void register_memory(Registry& registry);
void register_gemm(Registry& registry);
void register_transfers(Registry& registry);

const char* to_string(Role role) {
  switch (role) {
    case Role::ladder: return "ladder";
    case Role::baseline: return "baseline";
    case Role::broken: return "broken";
  }
  return "unknown";
}

Problem Problem::shaped(std::vector<std::int64_t> dimensions) {
  Problem p;
  p.n = 1;
  for (std::int64_t d : dimensions) p.n *= d;
  p.shape = std::move(dimensions);
  return p;
}

std::string Problem::label() const {
  if (shape.empty()) return "n=" + std::to_string(n);
  std::string text;
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

const Variant* Op::find_variant(const std::string& id) const {
  for (const Variant& v : variants)
    if (v.id == id) return &v;
  return nullptr;
}

void Registry::add(Op op) {
  CUDALAB_REQUIRE(!op.name.empty() && !op.summary.empty(), "registry: an op needs a name and a summary");
  CUDALAB_REQUIRE(find_op(op.name) == nullptr && find_experiment(op.name) == nullptr,
                  "registry: the name '" + op.name + "' is taken");
  CUDALAB_REQUIRE(op.work && op.device_bytes && op.host_bytes && op.make_workload,
                  "registry: op '" + op.name + "' lacks a model or workload factory");
  CUDALAB_REQUIRE(!op.variants.empty(), "registry: op '" + op.name + "' has no variants");
  for (const auto* problems : {&op.bench_problems, &op.test_problems})
    for (const Problem& p : *problems)
      CUDALAB_REQUIRE(p.shape.size() == op.shape_names.size(),
                      "registry: op '" + op.name + "' has a problem of the wrong rank: " + p.label());
  std::set<std::string> ids;
  for (const Variant& v : op.variants) {
    CUDALAB_REQUIRE(!v.id.empty() && !v.technique.empty() && v.launch,
                    "registry: a variant of '" + op.name + "' lacks an id, technique or launcher");
    CUDALAB_REQUIRE(ids.insert(v.id).second, "registry: variant id '" + v.id + "' appears twice in '" + op.name + "'");
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
  for (const ClaimCheck& c : claims_)
    CUDALAB_REQUIRE(c.id != claim.id, "registry: claim '" + claim.id + "' is checked twice");
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
    register_vecadd(r);
    register_reduce(r);
    register_scan(r);
    register_select(r);
    register_transpose(r);
    register_memory(r);
    register_histogram(r);
    register_conv2d(r);
    register_gemm(r);
    register_transfers(r);
    return r;
  }();
  return registry;
}

}  // namespace cudalab::harness
