// The tutorial's host-pattern experiment (claim C01): 1000 iterations of vector add with the copies
// and a device synchronize inside the loop, against the same work with the copies and the sync
// hoisted out. The tutorial's point is that the GPU then sits idle most of the time.
#include <chrono>
#include <memory>
#include <vector>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "harness/statistics.hpp"
#include "ops/vecadd/ids.hpp"
#include "ops/vecadd/variants.hpp"

namespace cudalab::harness {
namespace {

constexpr int kIterations = 1000;
constexpr int kRepeats = 3;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct PatternBuffers {
  explicit PatternBuffers(std::int64_t n) : n(n), host_a(n), host_b(n), host_c(n), a(n), b(n), c(n) {
    for (std::int64_t i = 0; i < n; ++i) {
      host_a[i] = random_value(1, i, n, Distribution::uniform);
      host_b[i] = random_value(2, i, n, Distribution::uniform);
    }
  }
  vecadd_variants::VecaddArgs<float> args() const { return {a.data(), b.data(), c.data(), n}; }
  std::int64_t n;
  // Pageable host memory, as in the tutorial.
  std::vector<float> host_a, host_b, host_c;
  DeviceBuffer<float> a, b, c;
};

// The tutorial's loop: copy in, add, copy out, synchronize, 1000 times. Synchronous cudaMemcpy and
// the legacy default stream, as the tutorial wrote it.
double copies_in_loop(PatternBuffers& x) {
  const std::size_t bytes = static_cast<std::size_t>(x.n) * sizeof(float);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kIterations; ++i) {
    CUDALAB_CUDA_CHECK(cudaMemcpy(x.a.data(), x.host_a.data(), bytes, cudaMemcpyHostToDevice));
    CUDALAB_CUDA_CHECK(cudaMemcpy(x.b.data(), x.host_b.data(), bytes, cudaMemcpyHostToDevice));
    vecadd_variants::one_per_thread(x.args(), nullptr);
    CUDALAB_CUDA_CHECK(cudaMemcpy(x.host_c.data(), x.c.data(), bytes, cudaMemcpyDeviceToHost));
    CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
  }
  return seconds_since(start);
}

// The fix: copy once, launch 1000 kernels back to back, copy the result once, synchronize once.
double copies_hoisted(PatternBuffers& x) {
  const std::size_t bytes = static_cast<std::size_t>(x.n) * sizeof(float);
  const auto start = std::chrono::steady_clock::now();
  CUDALAB_CUDA_CHECK(cudaMemcpy(x.a.data(), x.host_a.data(), bytes, cudaMemcpyHostToDevice));
  CUDALAB_CUDA_CHECK(cudaMemcpy(x.b.data(), x.host_b.data(), bytes, cudaMemcpyHostToDevice));
  for (int i = 0; i < kIterations; ++i) vecadd_variants::one_per_thread(x.args(), nullptr);
  CUDALAB_CUDA_CHECK(cudaMemcpy(x.host_c.data(), x.c.data(), bytes, cudaMemcpyDeviceToHost));
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
  return seconds_since(start);
}

// GPU time per kernel: kIterations launches captured in a CUDA graph and replayed between two
// events. A graph replay submits every kernel at once, so the GPU is not left waiting on the
// host's ~3-4 us per launch (which timing a plain launch loop would count as kernel time).
double kernel_seconds(PatternBuffers& x) {
  Stream stream;
  CUDALAB_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kIterations; ++i) vecadd_variants::one_per_thread(x.args(), stream.get());
  cudaGraph_t graph = nullptr;
  CUDALAB_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
  std::unique_ptr<CUgraph_st, cudaError_t (*)(cudaGraph_t)> graph_owner(graph, cudaGraphDestroy);
  cudaGraphExec_t exec = nullptr;
  CUDALAB_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::unique_ptr<CUgraphExec_st, cudaError_t (*)(cudaGraphExec_t)> exec_owner(exec, cudaGraphExecDestroy);
  CUDALAB_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));  // warm-up
  Event start, stop;
  std::vector<double> samples;
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    start.record(stream.get());
    CUDALAB_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
    stop.record(stream.get());
    stop.synchronize();
    samples.push_back(stop.elapsed_ms_since(start) * 1e-3 / kIterations);
  }
  return summarize(samples).median;
}

bool result_is_right(const PatternBuffers& x) {
  for (std::int64_t i = 0; i < x.n; ++i)
    if (x.host_c[i] != x.host_a[i] + x.host_b[i]) return false;
  return true;
}

nlohmann::json run_host_pattern(const ExperimentContext& context) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::int64_t n : {std::int64_t{1024}, std::int64_t{1} << 20}) {
    PatternBuffers buffers(n);
    copies_in_loop(buffers);  // warm-up: module load, first-touch of host pages
    copies_hoisted(buffers);
    const double kernel = kernel_seconds(buffers);
    for (const char* pattern : {"copies_in_loop", "copies_hoisted"}) {
      if (context.progress) context.progress("vecadd_host_pattern n=" + std::to_string(n) + " " + pattern);
      std::vector<double> totals;
      for (int r = 0; r < kRepeats; ++r) {
        std::fill(buffers.host_c.begin(), buffers.host_c.end(), -1.0f);
        totals.push_back(std::string(pattern) == "copies_in_loop" ? copies_in_loop(buffers) : copies_hoisted(buffers));
        if (!result_is_right(buffers))
          throw Error(ErrorKind::cuda, "vecadd_host_pattern: wrong result for " + std::string(pattern), __FILE__,
                      __LINE__);
      }
      const double total = summarize(totals).median;
      rows.push_back({n, pattern, kIterations, total * 1e3, total * 1e6 / kIterations, kernel * 1e6,
                      kernel * kIterations / total});
    }
  }
  return {{"name", vecadd_ids::kHostPattern},
          {"op", "vecadd"},
          {"summary", "1000 vector adds: copies and sync inside the loop vs hoisted out (claim C01)"},
          {"columns", {"n", "pattern", "iterations", "total_ms", "us_per_iteration", "kernel_us", "gpu_busy_fraction"}},
          {"rows", rows},
          {"notes",
           {"total_ms: median wall time of " + std::to_string(kRepeats) +
                " runs, pageable host memory, legacy default stream",
            "kernel_us: GPU time per kernel, from 1000 launches replayed as one CUDA graph (events around the replay, "
            "/ 1000)",
            "gpu_busy_fraction: 1000 x kernel_us / total_ms: the share of the run the GPU spent adding",
            "every run's result is checked element by element against the host sum"}}};
}

}  // namespace

void register_vecadd_host_pattern(Registry& registry) {
  registry.add(Experiment{
      vecadd_ids::kHostPattern, vecadd_ids::kOp,
      "1000 vector adds with copies and sync in the loop vs hoisted (claim C01)", run_host_pattern,
      bar_plot("1000 vector adds: copies inside the loop vs hoisted", nlohmann::json::array({"n", "pattern"}),
               "gpu_busy_fraction", "share of the run the GPU spent adding")});
}

}  // namespace cudalab::harness
