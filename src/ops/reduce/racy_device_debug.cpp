// The racy filter-free reduction run in both builds the tutorial compares (claim C17): the
// optimised one the ladder times, and the same loop compiled with -G. Each build sums fresh
// whole-number inputs ten times at 2^20 elements; the table counts the runs whose sum is wrong.
#include <cstdint>
#include <string>
#include <vector>

#include "cudalab/memory.hpp"
#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/reduce/ids.hpp"
#include "ops/reduce/variants.hpp"

namespace cudalab::harness {
namespace {

namespace rv = reduce_variants;

constexpr std::int64_t kElements = std::int64_t{1} << 20;
constexpr int kRuns = 10;

nlohmann::json run_racy_device_debug(const ExperimentContext& context) {
  DeviceBuffer<std::int32_t> in(kElements), out(1);
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(rv::workspace_bytes<std::int32_t>(kElements)));
  std::vector<std::int32_t> host(kElements);
  Stream stream;
  nlohmann::json rows = nlohmann::json::array();
  const struct {
    const char* build;
    void (*launch)(const rv::ReduceArgs<std::int32_t>&, cudaStream_t);
  } builds[] = {{"optimised (-O3, the ladder's no_filter_racy)", rv::shared_no_filter<std::int32_t>},
                {"device debug (-G)", rv::shared_no_filter_device_debug<std::int32_t>}};
  for (const auto& b : builds) {
    int wrong = 0;
    std::int64_t first_got = 0, first_right = 0;
    for (int run = 0; run < kRuns; ++run) {
      const std::uint64_t seed = mix64(context.seed ^ mix64(static_cast<std::uint64_t>(run + 1)));
      fill_random(in.data(), kElements, seed, Distribution::integers, stream.get());
      CUDALAB_CUDA_CHECK(cudaMemsetAsync(workspace.data(), 0, workspace.bytes(), stream.get()));
      rv::ReduceArgs<std::int32_t> args{in.data(), kElements, out.data()};
      args.workspace = workspace.data();
      args.workspace_bytes = workspace.bytes();
      b.launch(args, stream.get());
      std::int32_t got = 0;
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(&got, out.data(), sizeof got, cudaMemcpyDeviceToHost, stream.get()));
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), in.data(), in.bytes(), cudaMemcpyDeviceToHost, stream.get()));
      stream.synchronize();
      std::int64_t right = 0;  // whole numbers in [-16, 16]: the exact sum fits easily
      for (std::int32_t x : host) right += x;
      if (got != right && wrong++ == 0) {
        first_got = got;
        first_right = right;
      }
    }
    rows.push_back({b.build, kElements, kRuns, wrong, wrong > 0 ? nlohmann::json(first_got) : nlohmann::json("-"),
                    wrong > 0 ? nlohmann::json(first_right) : nlohmann::json("-")});
  }
  return {{"name", reduce_ids::kRacyDeviceDebug},
          {"op", reduce_ids::kOp},
          {"summary", "the racy filter-free reduction, optimised and built with -G, on fresh inputs (claim C17)"},
          {"columns", {"build", "n", "runs", "wrong", "first_wrong_got", "first_wrong_right"}},
          {"rows", rows},
          {"notes",
           {"int32 whole numbers in [-16, 16], a fresh seed per run, the sum checked exactly on the host",
            "both builds run the same source (shared_tree.cuh); only the compiler's flags differ"}}};
}

}  // namespace

void register_reduce_racy_device_debug(Registry& registry) {
  registry.add(Experiment{
      reduce_ids::kRacyDeviceDebug, reduce_ids::kOp,
      "the racy filter-free reduction, optimised and built with -G (claim C17)", run_racy_device_debug,
      bar_plot("Racy reduction: wrong sums in 10 runs, by build", "build", "wrong", "runs with a wrong sum (of 10)")});
}

}  // namespace cudalab::harness
