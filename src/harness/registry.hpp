// The registry: the single list of ops, their variants, experiments and claim checks. The CLI's
// `list`, `run` and `bench`, the GPU tests and the docs tables all iterate it; nothing else lists
// variants by hand.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "cudalab/device.hpp"
#include "cudalab/dtype.hpp"
#include "cudalab/error.hpp"
#include "harness/compare.hpp"
#include "harness/problem.hpp"
#include "harness/random.hpp"
#include "harness/roofline.hpp"
#include "harness/tensors.hpp"

namespace cudalab::harness {

enum class Role {
  ladder,    // a step of the ladder
  baseline,  // the vendor library doing the same job
  broken,    // wrong on purpose (a tutorial's bug): shown failing, never "best"
};
const char* to_string(Role role);

// What runs a variant's arithmetic. The concrete unit, and so the ceiling the variant is held
// to, follows from the problem's dtype: CUDA cores are FP32 FMA for floating inputs (bf16/fp16
// math widens to fp32) and integer ALUs for integers; tensor cores are TF32 for f32 inputs and
// BF16/FP16 for those dtypes. by_dtype: tensor cores for bf16/fp16 and CUDA cores otherwise, for
// a library call that picks its engine from the dtype (cudalab::gemm).
enum class Engine { cuda_cores, tensor_cores, by_dtype, fp8_tensor_cores };
ComputeUnit compute_unit(Engine engine, DType dtype);
const char* to_string(Engine engine);

// A variant's typed launcher bound to one problem's tensors: argument structs are built once,
// so a timed launch is the kernel launch alone.
using BoundLaunch = std::function<void(cudaStream_t)>;

struct Variant {
  std::string id;
  std::string technique;  // one line: what this step does differently
  Role role = Role::ladder;
  Engine engine = Engine::cuda_cores;
  std::vector<DType> dtypes;  // the dtypes it is implemented for (set by make_variant)
  // Binds the variant's launcher for problem.dtype to the tensors (and workspace) of `tensors`.
  std::function<BoundLaunch(const Problem&, Tensors&)> bind;
  // Empty when the variant can run `problem` on `device`; otherwise the reason it cannot
  // (architecture, shape limits). The dtype is checked by the harness from `dtypes`.
  std::function<std::string(const DeviceInfo&, const Problem&)> can_implement;
  // Scratch the launcher needs, handed to it zeroed; the same function sizes the allocation and
  // the fits-in-memory check.
  std::function<std::size_t(const Problem&)> workspace_bytes;
  // The launcher writes into its inputs (an in-place tree): the harness restores them before
  // every launch, outside the timed interval.
  bool modifies_inputs = false;

  bool supports(DType dtype) const;
};

// "" when `variant` can run `problem` on `device`, else why not (dtype first, then the variant's
// own can_implement).
std::string why_not(const Variant& variant, const DeviceInfo& device, const Problem& problem);

// What an op's check sees: the problem, the inputs as generated and the outputs as the variant
// left them (host copies of every tensor, device tensors for references computed on the GPU), and
// the unit the variant ran on (a TF32 result is judged with a TF32 tolerance).
struct CheckContext {
  const Problem& problem;
  Distribution distribution;
  ComputeUnit unit;
  const Tensors& tensors;
  cudaStream_t stream;
};

// An op: named dimensions, dtypes and scalar parameters; its tensors; the CPU reference check;
// the work model; and its variants. One generic workload (harness/workload.hpp) runs every op.
struct Op {
  std::string name;
  std::string summary;
  std::vector<std::string> dim_names;  // {"n"}, {"M", "N", "K"}, {"height", "width", "filter"}
  std::vector<DType> dtypes;           // what --dtype may name; the first is the default
  std::vector<Param> params;           // the named scalar parameters with their defaults
  std::vector<TensorSpec> tensors;
  // Inputs that are functions of the others (the attention backward's O and L, the forward of its
  // Q, K and V): run once the fills are done and before the inputs' host copies are taken, so the
  // check sees them as the variants do. Empty for most ops.
  std::function<void(const Problem&, Tensors&, cudaStream_t)> derive_inputs;
  std::vector<Problem> bench_problems;  // what `cudalab bench` times
  // Input distributions `bench` times each problem on, reported separately (e.g. a histogram's
  // uniform input and its all-one-value worst case).
  std::vector<Distribution> bench_distributions = {Distribution::uniform};
  std::vector<Problem> test_problems;  // what the GPU tests verify, every dtype
  // The minimum traffic and arithmetic the problem needs (each input read once, each output
  // written once), whatever a variant actually does: a variant that moves more shows a lower
  // effective bandwidth, which is the point.
  std::function<Work(const Problem&)> work;
  // Compares the outputs with the double-precision CPU reference.
  std::function<Comparison(const CheckContext&)> check;
  // Memory the check needs beyond the tensors and their host copies (a reference computed on the
  // GPU, the reference's own arrays); empty means none.
  std::function<std::size_t(const Problem&)> check_device_bytes;
  std::function<std::size_t(const Problem&)> check_host_bytes;
  std::vector<Variant> variants;

  const Variant* find_variant(const std::string& id) const;
  // A problem of this op with `dims` (in dim_names' order), `dtype` and the default parameters
  // overridden by `params`; throws invalid_argument for a wrong rank, dtype or parameter name.
  Problem problem(const std::vector<std::int64_t>& dims, DType dtype, const std::vector<Param>& params = {}) const;
};

// Every combination of `sizes` and `dtypes`, sizes first: the usual bench and test lists.
std::vector<Problem> cross(const Op& op, const std::vector<std::vector<std::int64_t>>& sizes,
                           const std::vector<DType>& dtypes, const std::vector<Param>& params = {});
// Two lists of problems, one after the other: sweeps written as sums of cross products.
inline std::vector<Problem> operator+(std::vector<Problem> a, const std::vector<Problem>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The fused row ops' bench (bias_act, the norms, softmax): 16384 x 8192 in every dtype of the op,
// then the width sweep 1024, 4096, 16384, 65536, 262144 at 2^28 elements (1 GiB of fp32) in fp32 and bf16 only. Width
// 8192 is the first problem's; fp16 moves the same bytes as bf16, and each sweep problem costs about 20 s of host-side
// checking on the H100 machine.
std::vector<Problem> row_op_bench_problems(const Op& op, const std::vector<Param>& params = {});

// The launcher of `launch` whose argument struct `Args` matches the problem's dtype, bound to the
// problem's tensors: one fold over the structs, each naming its dtype by its `Element`.
template <typename Binding, typename... Args, typename... Launch>
BoundLaunch bind_launcher(const Problem& problem, Tensors& tensors, const Launch&... launch) {
  BoundLaunch bound;
  (void)((problem.dtype == dtype_of_v<typename Args::Element> &&
          (
              bound = [launcher = launch, args = Binding::template bind<Args>(problem, tensors)](
                          cudaStream_t stream) { launcher(args, stream); },
              true)) ||
         ...);
  if (!bound)
    throw Error(ErrorKind::invalid_argument, std::string("no launcher for dtype ") + to_string(problem.dtype), __FILE__,
                __LINE__);
  return bound;
}

// A variant from one launcher template over the op's element list: `launch(args, stream)` is
// called with ArgsOf<T> for the problem's element type T, one of `elements`
// (CUDALAB_ELEMENT_LIST of the op's list macro). CUDALAB_LAUNCHER(name) wraps a launcher template.
// `Binding::bind<Args>(problem, tensors)` fills the struct from the problem and its tensors, the
// same struct the library call and a PyTorch binding fill from their own arguments.
template <typename Binding, template <typename> class ArgsOf, typename... Ts, typename Launch>
Variant make_variant(std::string id, std::string technique, Role role, TypeList<Ts...>, Launch launch) {
  static_assert(sizeof...(Ts) > 0, "a variant needs at least one element type");
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.role = role;
  v.dtypes = dtypes_of(TypeList<Ts...>{});
  v.bind = [launch](const Problem& problem, Tensors& tensors) {
    // The one generic launcher, passed once per element type.
    return bind_launcher<Binding, ArgsOf<Ts>...>(problem, tensors, (static_cast<void>(sizeof(Ts)), launch)...);
  };
  return v;
}

// A launcher template as the generic launcher make_variant takes: CUDALAB_LAUNCHER(v::vectorized).
#define CUDALAB_LAUNCHER(name) [](const auto& args, cudaStream_t stream) { name(args, stream); }

// A variant from typed launchers spelled one by one (launch<float>, launch<std::int32_t>, ...),
// each taking the op's argument struct for one dtype: for ops whose variants take different sets.
template <typename Binding, typename... Args>
Variant make_variant(std::string id, std::string technique, Role role,
                     void (*... launchers)(const Args&, cudaStream_t)) {
  static_assert(sizeof...(Args) > 0, "a variant needs at least one launcher");
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.role = role;
  v.dtypes = {dtype_of_v<typename Args::Element>...};
  v.bind = [launchers...](const Problem& problem, Tensors& tensors) {
    return bind_launcher<Binding, Args...>(problem, tensors, launchers...);
  };
  return v;
}

// Results of a finished run, handed to experiments' and claims' code as JSON (the same form the
// results file has, so `cudalab report` can re-evaluate claims from a saved file).
struct ExperimentContext {
  DeviceInfo device;
  Ceilings ceilings;
  std::uint64_t seed = 0;
  std::vector<std::int64_t> sizes;  // --n, for an experiment that takes it (Experiment::sizes); else empty
  std::function<void(const std::string&)> progress;
};

// An experiment produces a table: {"name", "summary", "columns": [...], "rows": [[...], ...],
// "notes": [...]}; values are numbers or strings. `plots` says how to draw that table (line or
// bar chart specs, scripts/plots); run_experiment copies them into the result, and scripts/plots draws
// a results file with this build's specs, so older files get the same charts.
struct Experiment {
  using Run = std::function<nlohmann::json(const ExperimentContext&)>;
  Experiment(std::string name, std::string op, std::string summary, Run run,
             nlohmann::json plots = nlohmann::json::array(), std::string sizes = {})
      : name(std::move(name)),
        op(std::move(op)),
        summary(std::move(summary)),
        run(std::move(run)),
        plots(std::move(plots)),
        sizes(std::move(sizes)) {}

  std::string name;
  std::string op;  // the op whose docs page shows it
  std::string summary;
  Run run;
  nlohmann::json plots;
  std::string sizes;  // what --n chooses in it, for `cudalab list`; empty: it takes no --n
};

// A plots list of one bar chart: a bar per row, labelled by `label` (a column, or a list of
// columns joined by spaces), as long as the row's `value` column.
// A line chart's "predicted" entries (scripts/plots): a tutorial's figures for the chart's axes,
// drawn beside the measured lines and named by `label` (the tutorial and its claim).
nlohmann::json predicted_points(const std::string& label, const std::vector<std::pair<double, double>>& points);
nlohmann::json predicted_level(const std::string& label, double y);

nlohmann::json bar_plot(const std::string& title, const nlohmann::json& label, const std::string& value,
                        const std::string& value_label);

// Runs `experiment` and attaches its plot specs to the table it returns.
nlohmann::json run_experiment(const Experiment& experiment, const ExperimentContext& context);

// A record a claim reads: a variant of an op at a problem. Registry::add refuses a claim whose
// uses name an op, variant or bench problem that is not registered, so a rename cannot silently
// leave a claim unjudged.
struct ClaimUse {
  std::string op;
  std::string variant;
  Problem problem;
};

// A tutorial claim (docs/claims.md lists them), judged from a results document. Returns
// {"id", "claim", "source", "predicted", "measured", "ratio", "verdict"} or null when the results
// lack what the claim needs.
struct ClaimCheck {
  std::string id;
  std::string page;  // the op or experiment page whose docs show the verdict
  std::vector<ClaimUse> uses;
  std::function<nlohmann::json(const nlohmann::json& results)> evaluate;
};

class Registry {
 public:
  // Each add validates (unique names, launch set, technique given) and throws cudalab::Error.
  void add(Op op);
  void add(Experiment experiment);
  void add(ClaimCheck claim);

  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Experiment>& experiments() const { return experiments_; }
  const std::vector<ClaimCheck>& claims() const { return claims_; }
  const Op* find_op(const std::string& name) const;
  const Experiment* find_experiment(const std::string& name) const;

 private:
  std::vector<Op> ops_;
  std::vector<Experiment> experiments_;
  std::vector<ClaimCheck> claims_;
};

// Every op, experiment and claim cudalab ships.
const Registry& builtin_registry();

}  // namespace cudalab::harness
