// Verify-then-time: for each variant of an op at one problem size, fresh inputs, poisoned
// outputs, a check against the CPU reference, and only then the timing.
#pragma once

#include <cstdint>
#include <functional>
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

// Throws Error{out_of_memory} with the sizes involved when running `variants` (all of the op's
// when empty) at `problem` needs more device memory than is free or more host memory than the
// machine has. The sizes are the workload's own (workload_device_bytes, workload_host_bytes).
void require_fits(const Op& op, const Problem& problem, const std::vector<std::string>& variants = {});

// Runs the selected variants of `op` at `problem`. Unknown variant ids throw invalid_argument.
std::vector<Record> run_problem(const Op& op, const Problem& problem, const RunOptions& options,
                                const Ceilings& ceilings, KernelTimer& timer, const Progress& progress);

}  // namespace cudalab::harness
