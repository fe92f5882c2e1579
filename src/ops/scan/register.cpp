// The scan op: prefix sums of int32 (wrapping) and fp32 arrays, inclusive or exclusive (the
// `exclusive` parameter). Its tensors, CPU reference and work model, the ladder and the CUB
// baseline; the claim its numbers answer is in claims.cpp.
#include <string>

#include "cudalab/error.hpp"
#include "harness/registry.hpp"
#include "ops/scan/ids.hpp"
#include "ops/scan/reference.hpp"
#include "ops/scan/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = scan_ids;
namespace v = scan_variants;
using scan_variants::ScanArgs;
using scan_variants::ScanKind;

ScanKind kind_of(const Problem& problem) {
  return problem.param(ids::kExclusive) != 0 ? ScanKind::exclusive : ScanKind::inclusive;
}

// The arguments of `problem` without arrays or workspace: what the workspace sizing functions read.
template <typename T>
ScanArgs<T> shape_of(const Problem& problem) {
  ScanArgs<T> args;
  args.n = problem.dim("n");
  args.kind = kind_of(problem);
  return args;
}

struct ScanBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args = shape_of<T>(problem);
    args.in = tensors.data<T>("in");
    args.out = tensors.data<T>("out");
    args.workspace = tensors.workspace();
    args.workspace_bytes = tensors.workspace_bytes();
    return args;
  }
};

template <typename... Args>
Variant variant(const char* id, const char* technique, Role role, void (*... launchers)(const Args&, cudaStream_t)) {
  return make_variant<ScanBinding>(id, technique, role, launchers...);
}

// A variant that scans in one block, at most `capacity` elements.
Variant one_block(Variant v, std::int64_t capacity) {
  v.can_implement = [capacity](const DeviceInfo&, const Problem& p) {
    if (p.dim("n") <= capacity) return std::string();
    return "one block scans at most " + std::to_string(capacity) + " elements";
  };
  return v;
}

// A variant whose launcher takes scratch: `size` is the launcher's own sizing function, called
// with the problem's arguments in its dtype (a generic lambda over ScanArgs<T>).
template <typename Size>
Variant with_workspace(Variant v, Size size) {
  v.workspace_bytes = [size](const Problem& p) -> std::size_t {
    switch (p.dtype) {
      case DType::i32: return size(shape_of<std::int32_t>(p));
      case DType::f32: return size(shape_of<float>(p));
      default: break;
    }
    throw Error(ErrorKind::invalid_argument, std::string("scan has no dtype ") + to_string(p.dtype), __FILE__,
                __LINE__);
  };
  return v;
}

// int32 exactly with wrap-around; fp32 against double-precision sums with a tolerance that grows
// with each prefix's magnitude (ops/scan/reference.hpp).
Comparison check_scan_op(const CheckContext& c) {
  const std::int64_t n = c.problem.dim("n");
  const ScanKind kind = kind_of(c.problem);
  if (c.problem.dtype == DType::i32)
    return check_scan(c.tensors.host<std::int32_t>("in"), c.tensors.host<std::int32_t>("out"), n, kind);
  return check_scan(c.tensors.host<float>("in"), c.tensors.host<float>("out"), n, kind);
}

}  // namespace

void register_scan_claims(Registry& registry);

void register_scan(Registry& registry) {
  Op op;
  op.name = ids::kOp;
  op.summary = "prefix sum, inclusive or exclusive; int32 sums wrap around";
  op.dim_names = {"n"};
  op.dtypes = {DType::i32, DType::f32};
  op.params = {{ids::kExclusive, 0}};
  auto n = [](const Problem& p) { return p.dim("n"); };
  op.tensors = {{"in", TensorRole::input, {}, n}, {"out", TensorRole::output, {}, n}};
  const std::vector<Param> inclusive = {{ids::kExclusive, 0}};
  const std::vector<Param> exclusive = {{ids::kExclusive, 1}};
  // 2^10 for the single-block scans (claim C21), 2^20 and 2^28 for the whole-array ones.
  for (const auto& problems : {cross(op, {{1 << 10}, {1 << 20}, {1 << 28}}, {DType::i32}, inclusive),
                               cross(op, {{1 << 20}, {1 << 28}}, {DType::i32}, exclusive),
                               cross(op, {{1 << 20}, {1 << 28}}, {DType::f32}, inclusive)})
    op.bench_problems.insert(op.bench_problems.end(), problems.begin(), problems.end());
  // Empty; around a warp; the single-block capacities (1024, 2048) and one past them; one past
  // the 3072- and 4096-element tiles; a prime; two- and three-level hierarchies; 2^28 (1 GiB).
  const std::vector<std::vector<std::int64_t>> test_sizes = {
      {0}, {1}, {31}, {32}, {33}, {1024}, {2048}, {2049}, {3073}, {4097}, {1000003}, {1 << 24}, {1 << 28}};
  for (const auto* params : {&inclusive, &exclusive}) {
    const auto problems = cross(op, test_sizes, op.dtypes, *params);
    op.test_problems.insert(op.test_problems.end(), problems.begin(), problems.end());
  }
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("n")), size = static_cast<double>(size_of(p.dtype));
    return Work{size * n, size * n, n};
  };
  op.check = check_scan_op;
  op.check_host_bytes = [](const Problem& p) { return check_scan_host_bytes(p.dim("n")); };
  op.variants = {
      one_block(variant(ids::kHillisSteele, "one block: Hillis-Steele, log2(n) steps of n additions, double-buffered",
                        Role::ladder, v::hillis_steele<std::int32_t>, v::hillis_steele<float>),
                v::kHillisSteeleMaxItems),
      one_block(variant(ids::kBlelloch, "one block: Blelloch up-sweep/down-sweep tree, 2n additions", Role::ladder,
                        v::blelloch<std::int32_t>, v::blelloch<float>),
                v::kBlellochMaxItems),
      one_block(variant(ids::kBlellochPadded, "one block: Blelloch with a padding word per 32 against bank conflicts",
                        Role::ladder, v::blelloch_padded<std::int32_t>, v::blelloch_padded<float>),
                v::kBlellochMaxItems),
      with_workspace(
          variant(ids::kScanThenPropagateHillisSteele,
                  "Hillis-Steele scan per 1024-element tile, scan of tile sums, add-back pass", Role::ladder,
                  v::scan_then_propagate_hillis_steele<std::int32_t>, v::scan_then_propagate_hillis_steele<float>),
          [](const auto& args) { return v::scan_then_propagate_hillis_steele_workspace_bytes(args); }),
      with_workspace(variant(ids::kScanThenPropagate,
                             "padded Blelloch scan per 2048-element tile, scan of tile sums, add-back pass",
                             Role::ladder, v::scan_then_propagate<std::int32_t>, v::scan_then_propagate<float>),
                     [](const auto& args) { return v::scan_then_propagate_workspace_bytes(args); }),
      with_workspace(variant(ids::kReduceThenScan,
                             "tile sums pass, scan of sums, seeded tile scans; 16-byte vector loads, warp shuffles",
                             Role::ladder, v::reduce_then_scan<std::int32_t>, v::reduce_then_scan<float>),
                     [](const auto& args) { return v::reduce_then_scan_workspace_bytes(args); }),
      with_workspace(
          variant(ids::kDecoupledLookback, "single pass: tiles publish aggregate/prefix words, warp-wide look-back",
                  Role::ladder, v::decoupled_lookback<std::int32_t>, v::decoupled_lookback<float>),
          [](const auto& args) { return v::decoupled_lookback_workspace_bytes(args.n); }),
      with_workspace(variant(ids::kCub, "cub::DeviceScan (CCCL), temporary storage kept across launches",
                             Role::baseline, v::cub_device_scan<std::int32_t>, v::cub_device_scan<float>),
                     [](const auto& args) { return v::cub_device_scan_workspace_bytes(args); }),
  };
  registry.add(std::move(op));
  register_scan_claims(registry);
}

}  // namespace cudalab::harness
