// The registry: the single list of ops, their variants, experiments and claim checks. The CLI's
// `list`, `run` and `bench`, the GPU tests and the docs tables all iterate it; nothing else lists
// variants by hand.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "cudalab/device.hpp"
#include "harness/compare.hpp"
#include "harness/random.hpp"
#include "harness/roofline.hpp"

namespace cudalab::harness {

// A problem size. 1-D ops use `n` alone. Shaped ops (a matrix, an image) also give `shape`, in the
// order their Op::shape_names says (e.g. {M, N, K}); `n` is then the product of the dimensions,
// so sizes still order by it.
struct Problem {
  std::int64_t n = 0;               // elements
  std::vector<std::int64_t> shape;  // empty for 1-D ops

  Problem() = default;
  // Implicit so that a 1-D op's size lists read {{0}, {1}, {1 << 28}}.
  Problem(std::int64_t elements) : n(elements) {}  // NOLINT(google-explicit-constructor)

  static Problem shaped(std::vector<std::int64_t> dimensions);
  // "n=1000003", or "4096x4096x4096" for a shaped problem.
  std::string label() const;
  bool operator==(const Problem& other) const { return n == other.n && shape == other.shape; }
  bool operator!=(const Problem& other) const { return !(*this == other); }
};

enum class Role {
  ladder,    // a step of the ladder
  baseline,  // the vendor library doing the same job
  broken,    // wrong on purpose (a tutorial's bug): shown failing, never "best"
};
const char* to_string(Role role);

// Device inputs and outputs for one problem, plus what the host needs to check a result.
class Workload {
 public:
  virtual ~Workload() = default;
  // Fresh inputs from `seed`, and host copies of them for the CPU reference.
  virtual void generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream) = 0;
  // Fills every output with the poison pattern.
  virtual void poison(cudaStream_t stream) = 0;
  // Copies the outputs back and compares them with the double-precision CPU reference.
  virtual Comparison check(cudaStream_t stream) = 0;
};

struct Variant {
  std::string id;
  std::string technique;  // one line: what this step does differently
  Role role = Role::ladder;
  std::function<void(Workload&, cudaStream_t)> launch;
  // Optional, untimed, before every launch: restores what the previous launch consumed (an
  // in-place variant's input). Empty for variants that leave their inputs alone.
  std::function<void(Workload&, cudaStream_t)> prepare;
  // Empty when the variant can run `problem` on `device`; otherwise the reason it cannot.
  std::function<std::string(const DeviceInfo&, const Problem&)> unsupported;
};

struct Op {
  std::string name;
  std::string summary;
  // Empty for 1-D ops (sized by --n); otherwise the names of a problem's dimensions, e.g.
  // {"M", "N", "K"}, and problems are typed as --shape 4096x4096x4096.
  std::vector<std::string> shape_names;
  std::vector<Problem> bench_problems;  // what `cudalab bench` times
  // Input distributions `bench` times each size on, reported separately (e.g. a histogram's
  // uniform input and its all-one-value worst case).
  std::vector<Distribution> bench_distributions = {Distribution::uniform};
  std::vector<Problem> test_problems;  // what the GPU tests verify
  // The minimum traffic and arithmetic the problem needs (each input read once, each output
  // written once), whatever a variant actually does: a variant that moves more shows a lower
  // effective bandwidth, which is the point.
  std::function<Work(const Problem&)> work;
  std::function<std::size_t(const Problem&)> device_bytes;  // what the workload allocates
  std::function<std::size_t(const Problem&)> host_bytes;    // host copies for the check
  std::function<std::unique_ptr<Workload>(const Problem&)> make_workload;
  std::vector<Variant> variants;

  const Variant* find_variant(const std::string& id) const;
};

// Results of a finished run, handed to experiments' and claims' code as JSON (the same form the
// results file has, so `cudalab report` can re-evaluate claims from a saved file).
struct ExperimentContext {
  DeviceInfo device;
  Ceilings ceilings;
  std::uint64_t seed = 0;
  std::function<void(const std::string&)> progress;
};

// An experiment produces a table: {"name", "summary", "columns": [...], "rows": [[...], ...],
// "notes": [...]}; values are numbers or strings. `plots` says how to draw that table (line or
// bar chart specs, cli/plots.hpp); run_experiment copies them into the result, and `report` draws
// a results file with this build's specs, so older files get the same charts.
struct Experiment {
  std::string name;
  std::string op;  // the op whose docs page shows it
  std::string summary;
  std::function<nlohmann::json(const ExperimentContext&)> run;
  nlohmann::json plots = nlohmann::json::array();
};

// A plots list of one bar chart: a bar per row, labelled by `label` (a column, or a list of
// columns joined by spaces), as long as the row's `value` column.
nlohmann::json bar_plot(const std::string& title, const nlohmann::json& label, const std::string& value,
                        const std::string& value_label);

// Runs `experiment` and attaches its plot specs to the table it returns.
nlohmann::json run_experiment(const Experiment& experiment, const ExperimentContext& context);

// A claim of ../shared/CLAIMS.md, judged from a results document. Returns
// {"id", "claim", "source", "predicted", "measured", "ratio", "verdict"} or null when the results
// lack what the claim needs.
struct ClaimCheck {
  std::string id;
  std::string op;
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
