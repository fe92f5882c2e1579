// Experiment `attention_memory` (claim C33, "flash attention cuts attention memory from O(N^2) to
// O(N)"): the device memory one forward run holds, against seq, for the two forms that keep the
// seq x seq scores (the naive rung's three kernels and the cuBLAS baseline) and the flash rung
// (mma_pipelined, no workspace), at batch 2, 16 heads, head_dim 128, bf16, not causal.
//
// A run is the generic workload's, as the runner checks a variant: the op's tensors and the
// variant's workspace allocated by Workload, fresh inputs, poisoned outputs, one launch and a
// synchronize. The memory it holds is cudaMemGetInfo's free bytes before the workload allocates
// anything less its free bytes after the launch, with every buffer still allocated: tensors,
// workspace and whatever cuBLAS or the runtime allocated for the run. A run whose estimate
// (workload_device_bytes, the runner's require_fits test) exceeds the free memory is not attempted
// and shows "does not fit" with what it needs: naive at seq 32768 needs 128 GiB of scores alone.
// Every run reported passed the op's own check first, so no wrong kernel's memory is reported.
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/experiment_support.hpp"
#include "harness/registry.hpp"
#include "harness/runner.hpp"
#include "harness/workload.hpp"
#include "ops/attention/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = attention_ids;

constexpr std::int64_t kBatch = 2, kHeads = 16, kHeadDim = 128;
constexpr std::int64_t kSeqs[] = {1024, 2048, 4096, 8192, 16384, 32768};
// The scores kept (the textbook form, then the vendor library's), and the flash rung.
const char* const kVariants[] = {ids::kNaive, ids::kCublas, ids::kMmaPipelined};
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::size_t free_device_bytes(std::size_t* total = nullptr) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDALAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (total != nullptr) *total = total_bytes;
  return free_bytes;
}

Problem memory_problem(const Op& op, std::int64_t seq) {
  return op.problem({kBatch, kHeads, seq, kHeadDim}, DType::bf16, {{ids::kCausal, 0}, {ids::kKvHeads, 0}});
}

struct HeldRun {
  double bytes = 0;  // free before less free after: negative only if another process freed memory meanwhile
  Comparison comparison;
};

// One checked run of `variant` at `problem` and the device memory it holds once its launch has
// finished. The workload's buffers are freed on return.
HeldRun held_by_run(const Op& op, const Variant& variant, const Problem& problem, std::uint64_t seed,
                    cudaStream_t stream) {
  const std::size_t before = free_device_bytes();
  Workload workload(op, problem, variant.modifies_inputs);
  workload.launch_once(variant, seed, Distribution::uniform, stream);
  HeldRun run;
  run.bytes = static_cast<double>(before) - static_cast<double>(free_device_bytes());
  run.comparison = workload.check(variant, Distribution::uniform, stream);
  return run;
}

nlohmann::json run_attention_memory(const Op& op, const ExperimentContext& context) {
  Stream stream;
  std::size_t total = 0;
  const std::size_t free_at_start = free_device_bytes(&total);
  std::vector<std::string> notes = {
      std::string(ids::kHeldColumn) +
          ": cudaMemGetInfo's free bytes before the run allocated anything, less its free bytes after one launch and a "
          "synchronize with every buffer still allocated: Q, K, V, O and L as the generic workload allocates them, "
          "the variant's workspace, and whatever cuBLAS or the runtime allocated for the run; GiB = 2^30 bytes",
      std::string(ids::kNeededColumn) +
          ": the workload's estimate (tensors + the variant's workspace), which the runner's fits check holds against "
          "the free memory less a 512 MiB margin; a run that does not fit is not attempted",
      "scores_workspace_gib: the seq x seq scores the variant keeps (naive: S in fp32; cublas: S in fp32 and P in "
      "bf16); the flash rung keeps none",
      "each variant first runs once at seq " + std::to_string(kSeqs[0]) +
          ", unreported, so that one-off costs of the process (its kernels' lazy loading, the cuBLAS handle and its "
          "workspace) do not land on the smallest seq",
      "every run reported passed the op's own check (outputs poisoned, CPU reference in double over sampled rows of "
      "every (batch, head)) before its memory is shown; a failed check stops the experiment",
      "memory is read once the launch has finished: what a launch allocated and freed inside would not show (none of "
      "these variants does); cudaMemGetInfo counts the whole GPU, so another process allocating meanwhile would",
      "at the start: " + format_bytes(static_cast<double>(free_at_start)) + " free of " +
          format_bytes(static_cast<double>(total))};

  // The warm-up: seq 1024 holds well under a GiB for every variant.
  for (const char* id : kVariants) {
    const Variant& variant = *op.find_variant(id);
    const Problem problem = memory_problem(op, kSeqs[0]);
    if (why_not(variant, context.device, problem).empty())
      held_by_run(op, variant, problem, context.seed, stream.get());
  }

  nlohmann::json rows = nlohmann::json::array();
  std::uint64_t index = 0;
  for (const std::int64_t seq : kSeqs) {
    for (const char* id : kVariants) {
      const Variant& variant = *op.find_variant(id);
      const Problem problem = memory_problem(op, seq);
      const double needed = static_cast<double>(workload_device_bytes(op, problem, {&variant})) / kGiB;
      const double workspace =
          static_cast<double>(variant.workspace_bytes ? variant.workspace_bytes(problem) : 0) / kGiB;
      auto add_row = [&](const nlohmann::json& held, const std::string& status) {
        rows.push_back({seq, id, held, needed, workspace, status});
      };
      if (const std::string why = why_not(variant, context.device, problem); !why.empty()) {
        add_row("-", "skipped: " + why);
        continue;
      }
      try {
        require_fits(op, problem, {id});
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::out_of_memory) throw;
        add_row("-", ids::kMemoryDoesNotFit);
        notes.push_back(std::string(id) + " at seq " + std::to_string(seq) + ": " + e.what());
        continue;
      }
      if (context.progress)
        context.progress(std::string(ids::kMemoryExperiment) + " seq " + std::to_string(seq) + " " + id);
      const HeldRun run = held_by_run(op, variant, problem, mix64(context.seed ^ mix64(++index)), stream.get());
      if (!run.comparison.passed())
        data_check_failed(ids::kMemoryExperiment,
                          std::string(id) + " at " + problem.label() + ": " + run.comparison.summary());
      add_row(run.bytes / kGiB, ids::kMemoryVerified);
    }
  }
  return {{"name", ids::kMemoryExperiment},
          {"op", ids::kForward},
          {"summary",
           "device memory one forward run holds against seq, 2 x 16 x seq x 128 bf16, not causal: naive and cublas "
           "keep the seq x seq scores, mma_pipelined (flash) does not (claim C33)"},
          {"columns",
           {ids::kSeqColumn, ids::kVariantColumn, ids::kHeldColumn, ids::kNeededColumn, "scores_workspace_gib",
            ids::kStatusColumn}},
          {"rows", rows},
          {"notes", notes}};
}

}  // namespace

void register_attention_memory(Registry& registry) {
  const Op op = *registry.find_op(ids::kForward);
  registry.add(Experiment{ids::kMemoryExperiment, ids::kForward,
                          "device memory a forward run holds against seq: naive and cublas (seq x seq scores) vs "
                          "mma_pipelined (flash) (claim C33)",
                          [op](const ExperimentContext& context) { return run_attention_memory(op, context); },
                          nlohmann::json::array({{{"title",
                                                   "Device memory one attention forward holds, 2 x 16 x seq "
                                                   "x 128 bf16"},
                                                  {"x", ids::kSeqColumn},
                                                  {"y", ids::kHeldColumn},
                                                  {"series", ids::kVariantColumn},
                                                  {"x_log", true},
                                                  {"y_log", true},
                                                  {"y_label", "device memory held (GiB)"}}})});
}

}  // namespace cudalab::harness
