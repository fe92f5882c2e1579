// The stream compaction op: keep the int32 inputs x >= threshold, in order, and count them. The
// threshold follows from the `selected_percent` parameter on the harness's uniform int32 inputs
// (whole numbers in [-16, 16]). Its tensors, CPU reference and work model, the ladder and CUB's
// DeviceSelect::If as the baseline.
#include <climits>
#include <cmath>
#include <string>

#include "cudalab/error.hpp"
#include "harness/registry.hpp"
#include "ops/select/ids.hpp"
#include "ops/select/reference.hpp"
#include "ops/select/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = select_ids;
namespace v = select_variants;
using select_variants::SelectArgs;

// The uniform inputs are the 33 whole numbers -16..16, and x >= t keeps 17 - t of them: the
// threshold keeping the nearest share to p%. 0% is x >= 17 (none), 50% is x >= 0 (17 of 33,
// 51.5%), 100% is x >= -16 (all).
constexpr int kInputValues = 33;
std::int32_t threshold_of(const Problem& problem) {
  const double percent = problem.param(ids::kSelectedPercent);
  CUDALAB_REQUIRE(percent >= 0 && percent <= 100,
                  std::string(ids::kSelectedPercent) + " must be in [0, 100], got " + format_param(percent));
  return 17 - static_cast<std::int32_t>(std::lround(kInputValues * percent / 100));
}

// The share of the uniform inputs the threshold keeps, for the work model (the bytes written
// depend on the data).
double kept_fraction(const Problem& problem) { return static_cast<double>(17 - threshold_of(problem)) / kInputValues; }

struct SelectBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.in = tensors.data<T>("in");
    args.n = problem.dim("n");
    args.threshold = threshold_of(problem);
    args.out = tensors.data<T>("out");
    args.count = tensors.data<std::int64_t>("count");
    args.workspace = tensors.workspace();
    args.workspace_bytes = tensors.workspace_bytes();
    return args;
  }
};

// The arguments of `problem` without arrays or workspace: what the workspace sizing functions read.
SelectArgs<std::int32_t> shape_of(const Problem& problem) {
  SelectArgs<std::int32_t> args;
  args.n = problem.dim("n");
  args.threshold = threshold_of(problem);
  return args;
}

template <typename... Args>
Variant variant(const char* id, const char* technique, Role role,
                std::function<std::size_t(const Problem&)> workspace_bytes,
                void (*... launchers)(const Args&, cudaStream_t)) {
  Variant v = make_variant<SelectBinding>(id, technique, role, launchers...);
  v.workspace_bytes = std::move(workspace_bytes);
  return v;
}

// A variant whose output positions are int32 (the three-pass scan's): n < 2^31.
Variant int32_positions(Variant v) {
  v.can_implement = [](const DeviceInfo&, const Problem& p) {
    return p.dim("n") <= INT_MAX ? std::string() : std::string("int32 positions hold n < 2^31");
  };
  return v;
}

// The kept elements in order and their count, exactly. Only out[0, K) is the selection's (K the
// reference's count); the rest of out is not looked at.
Comparison check_select_op(const CheckContext& c) {
  return check_select(c.tensors.host<std::int32_t>("in"), c.problem.dim("n"), threshold_of(c.problem),
                      c.tensors.host<std::int32_t>("out"), c.tensors.host<std::int64_t>("count")[0]);
}

}  // namespace

void register_select(Registry& registry) {
  Op op;
  op.name = ids::kOp;
  op.summary = "int32 stream compaction: keep x >= threshold in order, count them";
  op.dim_names = {"n"};
  op.dtypes = {DType::i32};
  op.params = {{ids::kSelectedPercent, 50}};
  auto n = [](const Problem& p) { return p.dim("n"); };
  op.tensors = {{"in", TensorRole::input, {}, n},
                {"out", TensorRole::output, {}, n},
                {"count", TensorRole::output, DType::i64, [](const Problem&) { return std::int64_t{1}; }}};
  // Empty; around a warp; a prime that is no multiple of the 4096-element tile or of 4 (partial
  // tile, scalar tail); 2^24 and 2^28 (1 GiB, 65536 tiles of look-back).
  const std::vector<std::vector<std::int64_t>> test_sizes = {{0},  {1},       {31},      {32},
                                                             {33}, {1000003}, {1 << 24}, {1 << 28}};
  for (double percent : {0.0, 50.0, 100.0}) {
    const std::vector<Param> kept = {{ids::kSelectedPercent, percent}};
    const auto bench = cross(op, {{1 << 20}, {1 << 28}}, op.dtypes, kept);
    op.bench_problems.insert(op.bench_problems.end(), bench.begin(), bench.end());
    const auto test = cross(op, test_sizes, op.dtypes, kept);
    op.test_problems.insert(op.test_problems.end(), test.begin(), test.end());
  }
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("n")), size = static_cast<double>(size_of(p.dtype));
    return Work{size * n, size * kept_fraction(p) * n + static_cast<double>(size_of(DType::i64)), 0};
  };
  op.check = check_select_op;
  op.variants = {
      int32_positions(variant(
          ids::kThreePass, "flags pass, the scan ladder's exclusive scan of the flags, scatter pass", Role::ladder,
          [](const Problem& p) { return v::three_pass_workspace_bytes(shape_of(p)); }, v::three_pass)),
      variant(
          ids::kDecoupledLookback,
          "single pass: 16-byte loads, per-tile counts by popcount and shuffles, look-back, stores from registers",
          Role::ladder, [](const Problem& p) { return v::decoupled_lookback_workspace_bytes(p.dim("n")); },
          v::decoupled_lookback),
      variant(
          ids::kDecoupledLookbackStaged,
          "single pass, 8192-element tiles, kept elements packed in shared memory, then stored contiguously",
          Role::ladder, [](const Problem& p) { return v::decoupled_lookback_staged_workspace_bytes(p.dim("n")); },
          v::decoupled_lookback_staged),
      variant(
          ids::kCub, "cub::DeviceSelect::If (CCCL), temporary storage kept across launches", Role::baseline,
          [](const Problem& p) { return v::cub_device_select_workspace_bytes(shape_of(p)); }, v::cub_device_select),
  };
  registry.add(std::move(op));
}

}  // namespace cudalab::harness
