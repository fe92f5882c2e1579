#include "harness/runner.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/host_blocks.hpp"
#include "harness/nvtx.hpp"
#include "harness/workload.hpp"

namespace cudalab::harness {

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::passed: return "passed";
    case Outcome::failed: return "failed";
    case Outcome::skipped: return "skipped";
  }
  return "unknown";
}

namespace {

// The named variants, or (none named) every variant implemented for `dtype`: an op's other
// dtypes' ladders (gemm's FP32 steps at bf16) would only add "not implemented" rows.
std::vector<const Variant*> select_variants(const Op& op, const std::vector<std::string>& ids, DType dtype) {
  std::vector<const Variant*> selected;
  if (ids.empty()) {
    for (const Variant& v : op.variants)
      if (v.supports(dtype)) selected.push_back(&v);
    return selected;
  }
  for (const std::string& id : ids) {
    const Variant* v = op.find_variant(id);
    CUDALAB_REQUIRE(v != nullptr, "unknown variant '" + id + "' of op '" + op.name + "' (see `cudalab list`)");
    selected.push_back(v);
  }
  return selected;
}

// A record of `variant` at `problem` before it runs: what it is, the work, and the seed of its
// inputs (a different one per variant: each check sees inputs no earlier variant saw).
Record record_of(const Op& op, const Variant& variant, std::size_t index, const Problem& problem,
                 const RunOptions& options) {
  Record r;
  r.op = op.name;
  r.variant = variant.id;
  r.technique = variant.technique;
  r.role = variant.role;
  r.problem = problem;
  r.work = op.work(problem);
  r.distribution = to_string(options.distribution);
  r.seed = mix64(options.seed ^ mix64(index + 1));
  return r;
}

}  // namespace

std::optional<std::uint64_t> memory_limit() {
  const char* text = std::getenv(kMemoryLimitVariable);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return parse_bytes(text, kMemoryLimitVariable);
}

namespace {

// The sentence saying that `what` needs more than `needed` device bytes can have, or empty where it
// fits: the GPU's free memory (or memory_limit() where lower) less a margin for the timer's flush
// buffer, cuBLAS workspaces and the runtime itself.
std::string device_shortfall(const std::string& what, std::size_t needed) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDALAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  std::string limited;
  if (const std::optional<std::uint64_t> limit = memory_limit(); limit && *limit < free_bytes) {
    free_bytes = static_cast<std::size_t>(*limit);
    limited = " (" + std::string(kMemoryLimitVariable) + " allows " + format_bytes(double(*limit)) + ")";
  }
  const std::size_t margin = 512u << 20;
  if (needed + margin <= free_bytes) return "";
  return what + " needs " + format_bytes(double(needed)) + " of device memory; the GPU has " +
         format_bytes(double(free_bytes)) + " free of " + format_bytes(double(total_bytes)) + limited;
}

}  // namespace

void require_fits(const Op& op, const Problem& problem, const std::vector<std::string>& variants) {
  const std::vector<const Variant*> selected = select_variants(op, variants, problem.dtype);
  // The problem runs where its lightest selected variant fits; run_problem skips the others, each
  // with its reason.
  std::size_t device_needed = workload_device_bytes(op, problem, selected);
  for (const Variant* v : selected)
    device_needed = std::min(device_needed, variant_device_bytes(op, problem, selected, *v));
  if (const std::string why = device_shortfall(op.name + " at " + problem.label(), device_needed); !why.empty())
    throw Error(ErrorKind::out_of_memory, why, __FILE__, __LINE__);
  const std::size_t host_needed = workload_host_bytes(op, problem);
  const double host_total = physical_memory_bytes();
  if (static_cast<double>(host_needed) > 0.9 * host_total) {
    throw Error(ErrorKind::out_of_memory,
                op.name + " at " + problem.label() + " needs " + format_bytes(double(host_needed)) +
                    " of host memory to check the result; this machine has " + format_bytes(host_total),
                __FILE__, __LINE__);
  }
}

// Library calls that take scratch from the stream-ordered allocator (split-K GEMM, the scans)
// would otherwise map it afresh in every timed launch: the default pool hands its memory back to
// the driver at each synchronization. Keeping it, as every caching allocator does (PyTorch's
// included), times the kernels rather than the mapping.
void keep_stream_ordered_memory() {
  int device = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  CUDALAB_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t keep_all = UINT64_MAX;
  CUDALAB_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
}

std::vector<Record> run_problem(const Op& op, const Problem& problem, const RunOptions& options,
                                const Ceilings& ceilings, KernelTimer& timer, const Progress& progress) {
  const std::vector<const Variant*> selected = select_variants(op, options.variants, problem.dtype);
  require_fits(op, problem, options.variants);
  // A variant whose workspace does not fit beside the problem's tensors is skipped with that reason
  // (an O(seq^2) attention rung where the flash rungs fit); measured before the workload allocates.
  std::vector<std::string> shortfalls;
  for (const Variant* v : selected)
    shortfalls.push_back(device_shortfall(op.name + " " + v->id + " at " + problem.label(),
                                          variant_device_bytes(op, problem, selected, *v)));
  const DeviceInfo device = device_info();
  const bool keep_inputs =
      std::any_of(selected.begin(), selected.end(), [](const Variant* v) { return v->modifies_inputs; });
  Workload workload(op, problem, keep_inputs);
  Stream stream;
  keep_stream_ordered_memory();

  std::vector<Record> records;
  double first_median = 0;
  for (std::size_t index = 0; index < selected.size(); ++index) {
    const Variant& variant = *selected[index];
    Record r = record_of(op, variant, index, problem, options);
    std::string reason = why_not(variant, device, problem);
    if (reason.empty()) reason = shortfalls[index];
    if (!reason.empty()) {
      r.outcome = Outcome::skipped;
      r.skip_reason = reason;
      records.push_back(r);
      continue;
    }
    r.unit = compute_unit(variant.engine, problem.dtype);
    const std::string what = op.name + " " + problem.label() + " " + variant.id;
    // No "/" in the name: ncu reads "/" in --nvtx-include as nesting of push/pop ranges.
    const std::string range_name = op.name + " " + variant.id + " " + problem.label();
    if (progress) progress(what + ": checking");
    const BoundLaunch launch = [&] {
      const NvtxRange range(range_name + " check");
      BoundLaunch bound = workload.launch_once(variant, r.seed, options.distribution, stream.get());
      r.comparison = workload.check(variant, options.distribution, stream.get());
      return bound;
    }();
    r.outcome = r.comparison.passed() ? Outcome::passed : Outcome::failed;
    if (r.outcome == Outcome::passed && options.profile) {
      workload.prepare(variant, stream.get());
      const NvtxRange range(range_name + " profile");
      launch(stream.get());
      stream.synchronize();
    }
    if (r.outcome == Outcome::passed && !options.check_only && !options.profile) {
      const NvtxRange range(range_name + " time");
      if (progress) progress(what + ": timing");
      const bool restores = variant.modifies_inputs ||
                            std::any_of(op.tensors.begin(), op.tensors.end(),
                                        [](const TensorSpec& t) { return t.role == TensorRole::input_output; });
      std::function<void(cudaStream_t)> prepare;
      if (restores) prepare = [&](cudaStream_t s) { workload.prepare(variant, s); };
      r.time_ms = timer.time(launch, stream.get(), options.timing, prepare);
      r.timed = true;
      r.roofline_point = roofline(ceilings, r.work, r.unit, r.time_ms.median * 1e-3);
      if (first_median == 0 && r.role == Role::ladder) first_median = r.time_ms.median;
      r.speedup_vs_first = first_median > 0 ? first_median / r.time_ms.median : 0;
    }
    records.push_back(r);
  }
  return records;
}

std::vector<Record> skipped_problem(const Op& op, const Problem& problem, const RunOptions& options,
                                    const std::string& reason) {
  const std::vector<const Variant*> selected = select_variants(op, options.variants, problem.dtype);
  std::vector<Record> records;
  for (std::size_t index = 0; index < selected.size(); ++index) {
    Record r = record_of(op, *selected[index], index, problem, options);
    r.outcome = Outcome::skipped;
    r.skip_reason = reason;
    records.push_back(r);
  }
  return records;
}

}  // namespace cudalab::harness
