// The bias + activation ops: `bias_act` (y = act(x + bias)) and `bias_act_backward` (dx = dy *
// act'(x + bias), dbias = the column sums of dx), over [rows, features] in fp32, bf16 and fp16, with
// the `activation` parameter (an Activation's value). Their tensors, checks (reference.hpp)
// and work models, the ladders and the unfused baseline; claim C32 is in claims.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/registry.hpp"
#include "ops/bias_act/ids.hpp"
#include "ops/bias_act/reference.hpp"
#include "ops/bias_act/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = bias_act_ids;
namespace v = bias_act_variants;

using Elements = BiasActElements;

// The problem's activation; can_implement refuses values that name none before any bind.
Activation activation_of(const Problem& p) {
  return static_cast<Activation>(static_cast<int>(p.param(ids::kActivation)));
}

std::string activation_problem(const Problem& p) {
  const double a = p.param(ids::kActivation);
  if (a == static_cast<double>(static_cast<long long>(a)) && is_activation(static_cast<long long>(a))) return "";
  return "activation is " + activation_values() + ", got " + format_param(a);
}

std::int64_t elements(const Problem& p) { return p.dim("rows") * p.dim("features"); }
std::int64_t features(const Problem& p) { return p.dim("features"); }

struct ForwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.x = tensors.data<T>("x");
    args.bias = tensors.data<T>("bias");
    args.y = tensors.data<T>("y");
    args.rows = problem.dim("rows");
    args.features = problem.dim("features");
    args.activation = activation_of(problem);
    args.workspace = tensors.workspace();
    args.workspace_bytes = tensors.workspace_bytes();
    return args;
  }
};

struct BackwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.x = tensors.data<T>("x");
    args.bias = tensors.data<T>("bias");
    args.dy = tensors.data<T>("dy");
    args.dx = tensors.data<T>("dx");
    args.dbias = tensors.data<T>("dbias");
    args.rows = problem.dim("rows");
    args.features = problem.dim("features");
    args.activation = activation_of(problem);
    args.workspace = tensors.workspace();
    args.workspace_bytes = tensors.workspace_bytes();
    return args;
  }
};

template <typename Binding, template <typename> class ArgsOf, typename Launch>
Variant variant(const char* id, const char* technique, Role role, Launch launch) {
  Variant variant = make_variant<Binding, ArgsOf>(id, technique, role, Elements{}, launch);
  variant.can_implement = [](const DeviceInfo&, const Problem& p) { return activation_problem(p); };
  return variant;
}

// fp32 operations per element, counting exp, tanh and erf as one each: these ops are memory-bound,
// so the count only places them on the roofline's memory side.
double forward_flops(Activation activation) {
  return activation == Activation::relu ? 2 : activation == Activation::silu ? 5 : 9;
}
double backward_flops(Activation activation) {
  return activation == Activation::relu ? 3 : activation == Activation::silu ? 10 : 16;
}

// Bench: 16384 x 8192 for every dtype and activation (claim C32 reads the bf16 and fp32 ones), and
// the width sweep (row_op_bench_problems) for GELU (tanh), the activation with the most arithmetic
// per byte.
std::vector<Problem> bench_problems(const Op& op) {
  std::vector<Problem> problems = cross(op, {{16384, 8192}}, op.dtypes, {{ids::kActivation, 0}});
  for (const Problem& p : row_op_bench_problems(op, {{ids::kActivation, 1}})) problems.push_back(p);
  for (double activation : {2.0, 3.0})
    for (const Problem& p : cross(op, {{16384, 8192}}, op.dtypes, {{ids::kActivation, activation}}))
      problems.push_back(p);
  return problems;
}

// Test: rows 1, 2, 3, 7 and 300 across widths off every multiple (1, 3, 31, 33, 127, 1000, 1023,
// 4097: rows not 16-byte aligned) and on them (128, 4096, 8192, 65536, 262144), every dtype, GELU
// (tanh); four of them for ReLU, GELU (erf) and SiLU too; and one large problem per op (~2^24 elements,
// checked on uniform inputs only by the GPU suite): forward 2097153 x 8, past 65535 row tiles of
// the `tiled` rung so its blocks loop; backward 4097 x 4097, 33 partial sums per column of rows
// that are not 16-byte aligned.
std::vector<Problem> test_problems(const Op& op, const std::vector<std::int64_t>& large) {
  const std::vector<std::vector<std::int64_t>> shapes = {{1, 1},    {2, 3},      {7, 31},     {300, 33},   {1, 127},
                                                         {7, 128},  {300, 1000}, {2, 1023},   {300, 4096}, {7, 4097},
                                                         {2, 8192}, {3, 65536},  {2, 262144}, {1000, 1}};
  const std::vector<std::vector<std::int64_t>> every_activation = {{1, 1}, {300, 33}, {300, 4096}, {7, 4097}};
  std::vector<Problem> problems = cross(op, shapes, op.dtypes, {{ids::kActivation, 1}});
  for (double activation : {0.0, 2.0, 3.0})
    for (const Problem& p : cross(op, every_activation, op.dtypes, {{ids::kActivation, activation}}))
      problems.push_back(p);
  for (const Problem& p : cross(op, {large}, op.dtypes, {{ids::kActivation, 1}})) problems.push_back(p);
  return problems;
}

Op bias_act_op() {
  Op op;
  op.name = ids::kOp;
  op.summary = "y = act(x + bias), bias[features] broadcast over rows; activation " + activation_values();
  op.dim_names = {"rows", "features"};
  op.dtypes = dtypes_of(Elements{});
  op.params = {{ids::kActivation, 1}};
  op.tensors = {{"x", TensorRole::input, {}, elements},
                {"bias", TensorRole::input, {}, features},
                {"y", TensorRole::output, {}, elements}};
  op.bench_problems = bench_problems(op);
  op.test_problems = test_problems(op, {2097153, 8});
  // Read x and the bias once, write y once.
  op.work = [](const Problem& p) {
    const double size = static_cast<double>(size_of(p.dtype));
    const double n = static_cast<double>(elements(p));
    return Work{size * (n + static_cast<double>(features(p))), size * n, n * forward_flops(activation_of(p))};
  };
  op.check = [](const CheckContext& c) {
    return check_bias_act(c.problem.dtype, activation_of(c.problem), c.tensors["x"].host(), c.tensors["bias"].host(),
                          c.tensors["y"].host(), c.problem.dim("rows"), c.problem.dim("features"));
  };
  Variant unfused = variant<ForwardBinding, v::BiasActArgs>(
      ids::kUnfused,
      "baseline: x + bias written to global memory as T, then act over it (two launches of "
      "the vectorized kernel), as two PyTorch ops run",
      Role::baseline, CUDALAB_LAUNCHER(v::unfused));
  unfused.workspace_bytes = [](const Problem& p) {
    return v::unfused_workspace_bytes(p.dim("rows"), p.dim("features"), size_of(p.dtype));
  };
  Variant tutorial = variant<ForwardBinding, v::BiasActArgs>(
      ids::kTutorial, "the tutorial's kernels as written: grid (rows, features/256), one element per thread, tanhf",
      Role::ladder, CUDALAB_LAUNCHER(v::tutorial));
  tutorial.can_implement = [](const DeviceInfo&, const Problem& p) {
    const std::string activation = activation_problem(p);
    if (!activation.empty()) return activation;
    return std::string(v::tutorial_limits(p.dim("rows"), p.dim("features"), activation_of(p)));
  };
  op.variants = {
      tutorial,
      unfused,
      variant<ForwardBinding, v::BiasActArgs>(
          ids::kVectorized,
          "the flat tensor in 16-byte vectors, 4 per thread loaded together, bias reloaded per vector "
          "(gathered when rows are not 16-byte aligned), GELU as v*sigmoid(2z)",
          Role::ladder, CUDALAB_LAUNCHER(v::vectorized)),
      variant<ForwardBinding, v::BiasActArgs>(
          ids::kTiled,
          "32-row x 32-vector tiles, one per block in address order, bias in registers, 4 rows in "
          "flight per thread",
          Role::ladder, CUDALAB_LAUNCHER(v::tiled)),
  };
  return op;
}

Op bias_act_backward_op() {
  Op op;
  op.name = ids::kBackwardOp;
  op.summary = "dx = dy * act'(x + bias), dbias = sum of dx over rows (fp32, fixed order); activation as bias_act";
  op.dim_names = {"rows", "features"};
  op.dtypes = dtypes_of(Elements{});
  op.params = {{ids::kActivation, 1}};
  op.tensors = {{"x", TensorRole::input, {}, elements},
                {"bias", TensorRole::input, {}, features},
                {"dy", TensorRole::input, {}, elements},
                {"dx", TensorRole::output, {}, elements},
                {"dbias", TensorRole::output, {}, features}};
  op.bench_problems = bench_problems(op);
  op.test_problems = test_problems(op, {4097, 4097});
  // Read x, dy and the bias once, write dx and dbias once.
  op.work = [](const Problem& p) {
    const double size = static_cast<double>(size_of(p.dtype));
    const double n = static_cast<double>(elements(p)), f = static_cast<double>(features(p));
    return Work{size * (2 * n + f), size * (n + f), n * backward_flops(activation_of(p))};
  };
  op.check = [](const CheckContext& c) {
    const Tensors& t = c.tensors;
    return check_bias_act_backward(c.problem.dtype, activation_of(c.problem), t["x"].host(), t["bias"].host(),
                                   t["dy"].host(), t["dx"].host(), t["dbias"].host(), c.problem.dim("rows"),
                                   c.problem.dim("features"));
  };
  op.check_host_bytes = [](const Problem& p) {
    return bias_act_backward_check_host_bytes(p.dim("rows"), p.dim("features"));
  };
  const auto partials = [](const Problem& p) { return v::backward_workspace_bytes(p.dim("rows"), p.dim("features")); };
  Variant unfused = variant<BackwardBinding, v::BiasActBackwardArgs>(
      ids::kUnfused,
      "baseline: dx written by one pass, then read back and summed by column (the fused rung's tile kernels as two "
      "passes), as act_backward and dx.sum(0) run",
      Role::baseline, CUDALAB_LAUNCHER(v::unfused_backward));
  unfused.workspace_bytes = partials;
  Variant fused = variant<BackwardBinding, v::BiasActBackwardArgs>(
      ids::kFused,
      "one pass: 128-row tiles compute dx and fp32 column partial sums (16-byte vectors, bias in registers), then a "
      "small kernel adds the partials in a fixed order",
      Role::ladder, CUDALAB_LAUNCHER(v::fused_backward));
  fused.workspace_bytes = partials;
  op.variants = {
      variant<BackwardBinding, v::BiasActBackwardArgs>(
          ids::kNaive,
          "dx one element per thread, then dbias by one thread per column looping over the rows "
          "of dx",
          Role::ladder, CUDALAB_LAUNCHER(v::naive_backward)),
      unfused,
      fused,
  };
  return op;
}

}  // namespace

void register_bias_act_claims(Registry& registry);

void register_bias_act(Registry& registry) {
  registry.add(bias_act_op());
  registry.add(bias_act_backward_op());
  register_bias_act_claims(registry);
}

}  // namespace cudalab::harness
