// The sum-reduction ops: `reduce_sum` (fp32 or int32 in, the same dtype out) and
// `reduce_sum_double` (fp32 in, summed and returned in double). Their tensors, CPU reference and
// work model, the ladder and CUB; the claims their numbers answer (C16-C20) are in claims.cpp.
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "harness/registry.hpp"
#include "ops/reduce/ids.hpp"
#include "ops/reduce/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = reduce_ids;
namespace rv = reduce_variants;

constexpr char kIn[] = "in";
constexpr char kOut[] = "out";

// Fills ReduceArgs and ReduceInPlaceArgs alike: the in-place launchers get the input tensor
// itself (the harness restores it before every launch, as modifies_inputs asks).
struct ReduceBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    using Out = typename Args::Result;
    return {tensors.data<T>(kIn), problem.dim("n"), tensors.data<Out>(kOut), tensors.workspace(),
            tensors.workspace_bytes()};
  }
};

// What a variant's workspace holds at a problem: ticket counters and partial sums, or CUB's
// temporary storage; the sizing functions the library call allocates by. Null: no workspace.
using WorkspaceSize = std::size_t (*)(const Problem&);

std::size_t sum_workspace_bytes(const Problem& p) {
  const std::int64_t n = p.dim("n");
  return p.dtype == DType::i32 ? rv::workspace_bytes<std::int32_t>(n) : rv::workspace_bytes<float>(n);
}

std::size_t double_sum_workspace_bytes(const Problem& p) { return rv::workspace_bytes_f64(p.dim("n")); }

template <typename... Args>
Variant variant(const char* id, const char* technique, Role role, WorkspaceSize workspace,
                void (*... launchers)(const Args&, cudaStream_t)) {
  Variant v = make_variant<ReduceBinding>(id, technique, role, launchers...);
  if (workspace != nullptr) v.workspace_bytes = workspace;
  return v;
}

// The in-place tree overwrites its input: the harness restores it before each launch, untimed.
template <typename... Args>
Variant in_place(const char* id, const char* technique, void (*... launchers)(const Args&, cudaStream_t)) {
  Variant v = variant(id, technique, Role::ladder, sum_workspace_bytes, launchers...);
  v.modifies_inputs = true;
  return v;
}

// fp32: the sum in double and a tolerance of 2 ceil(log2 n) eps sum|x| (tree-order rounding, eps
// of the output's dtype), except on whole-number inputs in [-16, 16]: then every partial sum of
// any summation order stays an integer far below 2^24 (a random walk of such steps reaches
// ~10 sqrt(n), about 1.6e5 at n = 2^28), so every correct order is exact and the check is exact.
// That is what catches a race whose error hides inside the rounding tolerance of random real
// inputs. int32: the wrap-around sum, exactly (unsigned arithmetic is associative modulo 2^32).
Comparison check_sum(const CheckContext& c) {
  const Tensor& in = c.tensors[kIn];
  const Tensor& out = c.tensors[kOut];
  const std::int64_t n = in.count();
  const auto workers = static_cast<std::size_t>(parallel_workers(n));
  double reference = 0;
  Tolerance tolerance = Tolerance::exact();
  if (in.dtype() == DType::i32) {
    const std::int32_t* x = in.host_as<std::int32_t>();
    std::vector<std::uint32_t> sums(workers, 0u);
    parallel_chunks(n, [&](int w, std::int64_t begin, std::int64_t end) {
      std::uint32_t sum = 0;
      for (std::int64_t i = begin; i < end; ++i) sum += static_cast<std::uint32_t>(x[i]);
      sums[static_cast<std::size_t>(w)] = sum;
    });
    std::uint32_t sum = 0;
    for (std::uint32_t s : sums) sum += s;
    reference = static_cast<double>(static_cast<std::int32_t>(sum));
  } else {
    const float* x = in.host_as<float>();
    std::vector<double> sums(workers, 0.0), magnitudes(workers, 0.0);
    parallel_chunks(n, [&](int w, std::int64_t begin, std::int64_t end) {
      double sum = 0, magnitude = 0;
      for (std::int64_t i = begin; i < end; ++i) {
        sum += x[i];
        magnitude += std::fabs(static_cast<double>(x[i]));
      }
      sums[static_cast<std::size_t>(w)] = sum;
      magnitudes[static_cast<std::size_t>(w)] = magnitude;
    });
    double magnitude = 0;
    for (std::size_t w = 0; w < workers; ++w) {
      reference += sums[w];
      magnitude += magnitudes[w];
    }
    if (c.distribution != Distribution::integers)
      tolerance = out.dtype() == DType::f64 ? Tolerance::fp64_sum(n, magnitude) : Tolerance::fp32_sum(n, magnitude);
  }
  return compare_tensor(out, tolerance, [reference](std::int64_t) { return reference; });
}

// The shape both ops share: dimension n, the input in the problem's dtype, one output element of
// `out_dtype` (empty: the problem's dtype), the work model, the check, the sizes.
Op reduce_op(const char* name, const char* summary, std::vector<DType> dtypes, std::optional<DType> out_dtype) {
  Op op;
  op.name = name;
  op.summary = summary;
  op.dim_names = {"n"};
  op.dtypes = std::move(dtypes);
  op.tensors = {{kIn, TensorRole::input, {}, [](const Problem& p) { return p.dim("n"); }, {}},
                {kOut, TensorRole::output, out_dtype, [](const Problem&) { return std::int64_t{1}; }, {}}};
  // 2^10: the classic ladder's size (claim C18); 2^28: the size compared with CUB.
  op.bench_problems = cross(op, {{1 << 10}, {1 << 20}, {1 << 28}}, op.dtypes);
  op.test_problems = cross(op, {{0}, {1}, {31}, {32}, {33}, {1000003}, {1 << 24}, {1 << 28}}, op.dtypes);
  // Whole-number inputs: the check is exact for fp32 too (see check_sum).
  op.bench_distributions = {Distribution::integers};
  op.work = [out_dtype](const Problem& p) {
    const double n = static_cast<double>(p.dim("n"));
    return Work{static_cast<double>(size_of(p.dtype)) * n, static_cast<double>(size_of(out_dtype.value_or(p.dtype))),
                n};
  };
  op.check = check_sum;
  return op;
}

}  // namespace

void register_reduce_claims(Registry& registry);
void register_reduce_racy_device_debug(Registry& registry);

void register_reduce(Registry& registry) {
  Op sum = reduce_op(ids::kOp, "sum of fp32 or int32 values in their own dtype; int32 wraps on overflow",
                     {DType::f32, DType::i32}, std::nullopt);
  // One array past 2^31 elements (8 GiB): 64-bit indexing in every pass.
  sum.test_problems.push_back(sum.problem({(std::int64_t{1} << 31) + 7}, DType::f32));
  sum.variants = {
      in_place(ids::kGlobalModulo, "in place in global memory, filter tid % (2*stride) == 0", rv::global_modulo<float>,
               rv::global_modulo<std::int32_t>),
      in_place(ids::kGlobalMask, "the same filter as a mask, (tid & (2*stride-1)) == 0", rv::global_mask<float>,
               rv::global_mask<std::int32_t>),
      variant(ids::kNoFilterRacy, "the filter removed: neighbours' reads and writes race (BROKEN)", Role::broken,
              sum_workspace_bytes, rv::shared_no_filter<float>, rv::shared_no_filter<std::int32_t>),
      variant(ids::kInterleavedDivergent, "step 1: shared tile, tid % (2*s) == 0, divergent warps", Role::ladder,
              sum_workspace_bytes, rv::interleaved_divergent<float>, rv::interleaved_divergent<std::int32_t>),
      variant(ids::kInterleavedStrided, "step 2: strided index 2*s*tid, no divergence, bank conflicts", Role::ladder,
              sum_workspace_bytes, rv::interleaved_strided<float>, rv::interleaved_strided<std::int32_t>),
      variant(ids::kSequential, "step 3: sequential addressing tid < s, conflict-free", Role::ladder,
              sum_workspace_bytes, rv::sequential<float>, rv::sequential<std::int32_t>),
      variant(ids::kFirstAddOnLoad, "step 4: two elements added during the load, half the blocks", Role::ladder,
              sum_workspace_bytes, rv::first_add_on_load<float>, rv::first_add_on_load<std::int32_t>),
      variant(ids::kUnrolledLastWarp, "step 5: last warp by register shuffles", Role::ladder, sum_workspace_bytes,
              rv::unrolled_last_warp<float>, rv::unrolled_last_warp<std::int32_t>),
      variant(ids::kCompleteUnroll, "step 6: whole tree unrolled at compile time", Role::ladder, sum_workspace_bytes,
              rv::complete_unroll<float>, rv::complete_unroll<std::int32_t>),
      variant(ids::kMultiplePerThread, "step 7: resident grid, grid-stride sum per thread, then one tree", Role::ladder,
              sum_workspace_bytes, rv::multiple_per_thread<float>, rv::multiple_per_thread<std::int32_t>),
      variant(ids::kShuffleAtomic, "16-byte loads, warp shuffles, one atomicAdd per block", Role::ladder, nullptr,
              rv::shuffle_atomic<float>, rv::shuffle_atomic<std::int32_t>),
      variant(ids::kSinglePass, "16-byte loads, 4 accumulators, last block adds the partials: one launch", Role::ladder,
              sum_workspace_bytes, rv::single_pass<float>, rv::single_pass<std::int32_t>),
      variant(ids::kTileAtomic, "one 2048-element tile per block, no loop: blocks stream through memory in order",
              Role::ladder, nullptr, rv::tile_atomic<float>, rv::tile_atomic<std::int32_t>),
      variant(ids::kTileDeterministic,
              "8192-element tiles; the last block of each 256, then of all, adds partials: one launch", Role::ladder,
              sum_workspace_bytes, rv::tile_deterministic<float>, rv::tile_deterministic<std::int32_t>),
      variant(ids::kCub, "cub::DeviceReduce::Sum, the library baseline", Role::baseline, sum_workspace_bytes,
              rv::cub_sum<float>, rv::cub_sum<std::int32_t>),
  };
  registry.add(std::move(sum));

  Op double_sum =
      reduce_op(ids::kDoubleOp, "sum of fp32 values carried and returned in double", {DType::f32}, DType::f64);
  double_sum.variants = {
      variant(ids::kShuffleAtomic, "16-byte loads, double sums, one double atomicAdd per block", Role::ladder, nullptr,
              rv::shuffle_atomic_f64),
      variant(ids::kSinglePass, "16-byte loads, double sums, last block adds the partials", Role::ladder,
              double_sum_workspace_bytes, rv::single_pass_f64),
      variant(ids::kTileAtomic, "one 2048-element tile per block, double sums, one double atomicAdd per block",
              Role::ladder, nullptr, rv::tile_atomic_f64),
      variant(ids::kTileDeterministic, "8192-element tiles, double sums, two-level last-block finish", Role::ladder,
              double_sum_workspace_bytes, rv::tile_deterministic_f64),
      variant(ids::kCub, "cub::DeviceReduce::TransformReduce to double, the library baseline", Role::baseline,
              double_sum_workspace_bytes, rv::cub_sum_f64),
  };
  registry.add(std::move(double_sum));
  register_reduce_racy_device_debug(registry);
  register_reduce_claims(registry);
}

}  // namespace cudalab::harness
