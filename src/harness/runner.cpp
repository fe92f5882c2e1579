#include "harness/runner.hpp"

#include <unistd.h>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::harness {

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::passed: return "passed";
    case Outcome::failed: return "failed";
    case Outcome::skipped: return "skipped";
  }
  return "unknown";
}

void require_fits(const Op& op, const Problem& problem) {
  const std::size_t device_needed = op.device_bytes(problem);
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDALAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Keep a margin for the timer's flush buffer, cuBLAS workspaces and the runtime itself.
  const std::size_t margin = 512u << 20;
  if (device_needed + margin > free_bytes) {
    throw Error(ErrorKind::out_of_memory,
                op.name + " at " + problem.label() + " needs " + format_bytes(double(device_needed)) +
                    " of device memory; the GPU has " + format_bytes(double(free_bytes)) + " free of " +
                    format_bytes(double(total_bytes)),
                __FILE__, __LINE__);
  }
  const std::size_t host_needed = op.host_bytes(problem);
  const double host_total = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (static_cast<double>(host_needed) > 0.9 * host_total) {
    throw Error(ErrorKind::out_of_memory,
                op.name + " at " + problem.label() + " needs " + format_bytes(double(host_needed)) +
                    " of host memory to check the result; this machine has " + format_bytes(host_total),
                __FILE__, __LINE__);
  }
}

std::vector<Record> run_problem(const Op& op, const Problem& problem, const RunOptions& options,
                                const Ceilings& ceilings, KernelTimer& timer, const Progress& progress) {
  std::vector<const Variant*> selected;
  if (options.variants.empty()) {
    for (const Variant& v : op.variants) selected.push_back(&v);
  } else {
    for (const std::string& id : options.variants) {
      const Variant* v = op.find_variant(id);
      CUDALAB_REQUIRE(v != nullptr, "unknown variant '" + id + "' of op '" + op.name + "' (see `cudalab list`)");
      selected.push_back(v);
    }
  }
  require_fits(op, problem);
  const DeviceInfo device = device_info();
  std::unique_ptr<Workload> workload = op.make_workload(problem);
  Stream stream;

  std::vector<Record> records;
  double first_median = 0;
  for (std::size_t index = 0; index < selected.size(); ++index) {
    const Variant& variant = *selected[index];
    Record r;
    r.op = op.name;
    r.variant = variant.id;
    r.technique = variant.technique;
    r.role = variant.role;
    r.problem = problem;
    r.work = op.work(problem);
    r.distribution = to_string(options.distribution);
    // A different seed per variant: each check sees inputs no earlier variant saw.
    r.seed = mix64(options.seed ^ mix64(index + 1));
    const std::string why_not = variant.unsupported ? variant.unsupported(device, problem) : "";
    if (!why_not.empty()) {
      r.outcome = Outcome::skipped;
      r.skip_reason = why_not;
      records.push_back(r);
      continue;
    }
    if (progress) progress(op.name + " " + problem.label() + " " + variant.id + ": checking");
    workload->generate(r.seed, options.distribution, stream.get());
    workload->poison(stream.get());
    if (variant.prepare) variant.prepare(*workload, stream.get());
    variant.launch(*workload, stream.get());
    stream.synchronize();
    r.comparison = workload->check(stream.get());
    r.outcome = r.comparison.passed() ? Outcome::passed : Outcome::failed;
    if (r.outcome == Outcome::passed && !options.check_only) {
      if (progress) progress(op.name + " " + problem.label() + " " + variant.id + ": timing");
      std::function<void(cudaStream_t)> prepare;
      if (variant.prepare) prepare = [&](cudaStream_t s) { variant.prepare(*workload, s); };
      r.time_ms =
          timer.time([&](cudaStream_t s) { variant.launch(*workload, s); }, stream.get(), options.timing, prepare);
      r.timed = true;
      r.roofline_point = roofline(ceilings, r.work, r.time_ms.median * 1e-3);
      if (first_median == 0 && r.role == Role::ladder) first_median = r.time_ms.median;
      r.speedup_vs_first = first_median > 0 ? first_median / r.time_ms.median : 0;
    }
    records.push_back(r);
  }
  return records;
}

}  // namespace cudalab::harness
