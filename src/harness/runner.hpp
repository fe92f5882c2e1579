// Verify-then-time: for each variant of an op at one problem size, fresh inputs, poisoned
// outputs, a check against the CPU reference, and only then the timing.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/registry.hpp"
#include "harness/statistics.hpp"
#include "harness/timer.hpp"

namespace cudalab::harness {

struct RunOptions {
  std::vector<std::string> variants;  // ids to run; empty means all
  std::uint64_t seed = 0;
  Distribution distribution = Distribution::uniform;
  bool check_only = false;
  // After the check, launch each verified variant once more inside an NVTX range named
  // "<op>/<variant> <problem> profile", untimed, for `ncu --nvtx --nvtx-include`.
  bool profile = false;
  TimingOptions timing;
};

enum class Outcome { passed, failed, skipped };
const char* to_string(Outcome outcome);

struct Record {
  std::string op;
  std::string variant;
  std::string technique;
  Role role = Role::ladder;
  Problem problem;
  Work work;
  ComputeUnit unit = ComputeUnit::fp32_cuda_cores;  // what the variant's arithmetic ran on
  Outcome outcome = Outcome::skipped;
  std::string skip_reason;
  std::uint64_t seed = 0;  // the inputs this variant was checked on
  std::string distribution;
  Comparison comparison;  // when checked
  bool timed = false;
  Summary time_ms;               // when timed (verified variants only)
  RooflinePoint roofline_point;  // when timed
  double speedup_vs_first = 0;   // median time of the first timed ladder variant / this one
};

using Progress = std::function<void(const std::string&)>;

// The environment variable that caps the device memory runs may use, e.g. CUDALAB_MEMORY_LIMIT=20GiB:
// a problem is run only where it fits under the cap (as on a GPU of that size), else skipped with
// its reason. Its value as parse_bytes reads it; nullopt when unset or empty; throws
// Error{invalid_argument} for a value that is not a size.
inline constexpr const char* kMemoryLimitVariable = "CUDALAB_MEMORY_LIMIT";
std::optional<std::uint64_t> memory_limit();

// Throws Error{out_of_memory} with the sizes involved when not even the lightest of `variants` (all
// of the op's when empty) at `problem` fits the device memory that is free (or that memory_limit()
// allows), or the check needs more host memory than the machine has. The sizes are the workload's
// own (variant_device_bytes, workload_host_bytes); run_problem skips each variant that does not fit.
void require_fits(const Op& op, const Problem& problem, const std::vector<std::string>& variants = {});

// Runs the selected variants of `op` at `problem`. Unknown variant ids throw invalid_argument.
std::vector<Record> run_problem(const Op& op, const Problem& problem, const RunOptions& options,
                                const Ceilings& ceilings, KernelTimer& timer, const Progress& progress);

// The records run_problem would have made for a problem that could not run at all (it did not fit,
// say): each selected variant skipped for `reason`.
std::vector<Record> skipped_problem(const Op& op, const Problem& problem, const RunOptions& options,
                                    const std::string& reason);

}  // namespace cudalab::harness
