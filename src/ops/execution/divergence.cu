// Warp divergence (claim C22): every thread runs one dependent chain of FMAs, but which chain
// (which code path) depends on the thread. With the path chosen by lane % k, each warp holds k
// paths, and a warp issues one path at a time with the other lanes masked off: k paths cost k
// times the instructions of one. With the path chosen by warp % k (the guides' fix: branch on
// something constant across a warp), every warp runs a single path and the grid does the same
// total work at the uniform cost. The grid is full (64 warps per SM), so the FMA pipes are
// saturated and the kernel's time counts issued warp instructions, not the latency of one chain.
#include <cmath>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/experiment_support.hpp"
#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "harness/timer.hpp"
#include "ops/execution/ids.hpp"

namespace cudalab::harness::execution_experiments {
namespace {

constexpr int kBlock = 256;
constexpr int kBlocksPerSm = 8;  // 2048 threads per SM: 16 warps per scheduler hide the FMA latency
constexpr int kMaxPaths = 32;
constexpr int kChainUnroll = 16;
constexpr int kChainIterations = 2048;  // 32768 FMAs per path: the dispatch and the store vanish beside them
constexpr int kPathCounts[] = {1, 2, 4, 8, 16, 32};

// Path p's multiplier and addend. Immediates differ per path, so each path is its own code (the
// compiler cannot merge the 32 loops into one); the multiplier is below 1, so the chain converges
// to b / (1 - a) and never overflows.
__host__ __device__ constexpr float path_multiplier(int path) { return 0.5f + static_cast<float>(path) * 0.0078125f; }
__host__ __device__ constexpr float path_addend(int path) { return 1.0f + static_cast<float>(path); }

// kChainUnroll * iterations dependent FMAs; `iterations` is a kernel argument so the trip count,
// and with it the result, is unknown at compile time.
template <int Path>
__device__ __forceinline__ float path_chain(float x, int iterations) {
  constexpr float a = path_multiplier(Path), b = path_addend(Path);
#pragma unroll 1
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int u = 0; u < kChainUnroll; ++u) x = fmaf(x, a, b);
  }
  return x;
}

// The tutorials' shape: a branch per path. A warp whose lanes name k different cases runs k of
// them one after the other.
__device__ __forceinline__ float run_path(int path, float x, int iterations) {
  switch (path) {
    case 0: return path_chain<0>(x, iterations);
    case 1: return path_chain<1>(x, iterations);
    case 2: return path_chain<2>(x, iterations);
    case 3: return path_chain<3>(x, iterations);
    case 4: return path_chain<4>(x, iterations);
    case 5: return path_chain<5>(x, iterations);
    case 6: return path_chain<6>(x, iterations);
    case 7: return path_chain<7>(x, iterations);
    case 8: return path_chain<8>(x, iterations);
    case 9: return path_chain<9>(x, iterations);
    case 10: return path_chain<10>(x, iterations);
    case 11: return path_chain<11>(x, iterations);
    case 12: return path_chain<12>(x, iterations);
    case 13: return path_chain<13>(x, iterations);
    case 14: return path_chain<14>(x, iterations);
    case 15: return path_chain<15>(x, iterations);
    case 16: return path_chain<16>(x, iterations);
    case 17: return path_chain<17>(x, iterations);
    case 18: return path_chain<18>(x, iterations);
    case 19: return path_chain<19>(x, iterations);
    case 20: return path_chain<20>(x, iterations);
    case 21: return path_chain<21>(x, iterations);
    case 22: return path_chain<22>(x, iterations);
    case 23: return path_chain<23>(x, iterations);
    case 24: return path_chain<24>(x, iterations);
    case 25: return path_chain<25>(x, iterations);
    case 26: return path_chain<26>(x, iterations);
    case 27: return path_chain<27>(x, iterations);
    case 28: return path_chain<28>(x, iterations);
    case 29: return path_chain<29>(x, iterations);
    case 30: return path_chain<30>(x, iterations);
    case 31: return path_chain<31>(x, iterations);
    default: return x;
  }
}

// The path a thread takes: its lane's (divergent: k paths in every warp) or its warp's
// (warp-aligned: one path per warp, the same k paths over the grid).
__host__ __device__ inline int thread_path(std::int64_t thread, int paths, bool warp_aligned) {
  return static_cast<int>((warp_aligned ? thread / 32 : thread % 32) % paths);
}

__global__ void __launch_bounds__(kBlock, kBlocksPerSm)
    warp_divergence_kernel(float* out, float x0, int paths, bool warp_aligned, int iterations) {
  const std::int64_t i = global_thread_index();
  out[i] = run_path(thread_path(i, paths, warp_aligned), x0, iterations);
}

// Each path's result, by the same correctly rounded fp32 FMAs on the host.
std::vector<float> expected_results(float x0, int iterations) {
  std::vector<float> results(kMaxPaths);
  for (int p = 0; p < kMaxPaths; ++p) {
    float x = x0;
    for (int s = 0; s < iterations * kChainUnroll; ++s) x = std::fma(x, path_multiplier(p), path_addend(p));
    results[p] = x;
  }
  return results;
}

[[noreturn]] void wrong_data(const std::string& what) {
  throw Error(ErrorKind::cuda, std::string(execution_ids::kWarpDivergence) + ": wrong data: " + what, __FILE__,
              __LINE__);
}

const char* layout_name(bool warp_aligned) {
  return warp_aligned ? "warp % paths (warp-aligned)" : "lane % paths (divergent)";
}

nlohmann::json run_warp_divergence(const ExperimentContext& context) {
  const int blocks = context.device.sm_count * kBlocksPerSm;
  const std::int64_t threads = static_cast<std::int64_t>(blocks) * kBlock;
  const double useful_fmas = static_cast<double>(threads) * kChainIterations * kChainUnroll;
  const double sm_hz = context.device.sm_clock_khz * 1e3;
  // The start value comes from the seed, so nothing about the chain is known at compile time.
  const float x0 = 1.0f + static_cast<float>(context.seed % 1024) / 1024.0f;
  const std::vector<float> expected = expected_results(x0, kChainIterations);
  Stream stream;
  KernelTimer timer;
  const TimingOptions timing = sweep_timing(/*cold=*/false);  // no memory traffic to speak of: one store per thread
  DeviceBuffer<float> out(threads);
  std::vector<float> host_out(static_cast<std::size_t>(threads));
  nlohmann::json rows = nlohmann::json::array();
  for (const bool warp_aligned : {false, true}) {
    double uniform_ms = 0;
    for (const int paths : kPathCounts) {
      auto launch = [&](cudaStream_t s) {
        warp_divergence_kernel<<<blocks, kBlock, 0, s>>>(out.data(), x0, paths, warp_aligned, kChainIterations);
      };
      poison(out.data(), out.bytes(), stream.get());  // NaN: a thread that writes nothing fails the check
      launch(stream.get());
      CUDALAB_CUDA_CHECK(cudaGetLastError());
      CUDALAB_CUDA_CHECK(
          cudaMemcpyAsync(host_out.data(), out.data(), out.bytes(), cudaMemcpyDeviceToHost, stream.get()));
      stream.synchronize();
      for (std::int64_t t = 0; t < threads; ++t) {
        const int path = thread_path(t, paths, warp_aligned);
        if (host_out[t] != expected[path])
          wrong_data(std::string(layout_name(warp_aligned)) + ", " + std::to_string(paths) + " paths: thread " +
                     std::to_string(t) + " (path " + std::to_string(path) + ") got " + format_general(host_out[t]) +
                     ", expected " + format_general(expected[path]));
      }
      if (context.progress)
        context.progress(std::string(execution_ids::kWarpDivergence) + " " + layout_name(warp_aligned) + " " +
                         std::to_string(paths));
      const Summary t = timer.time(launch, stream.get(), timing);
      if (paths == 1) uniform_ms = t.median;
      rows.push_back({paths, layout_name(warp_aligned), warp_aligned ? 32 : 32 / paths, t.median, t.median / uniform_ms,
                      useful_fmas / (t.median * 1e-3) / sm_hz / context.device.sm_count});
    }
  }
  return {{"name", execution_ids::kWarpDivergence},
          {"op", execution_ids::kPage},
          {"summary",
           "1 to 32 code paths per warp (path = lane % k) against the same paths aligned to warps (path = warp % k) "
           "(claim C22)"},
          {"columns",
           {"paths", "layout", "lanes_per_path_in_a_warp", "median_ms", "slowdown_vs_1_path",
            "useful_fma_per_clock_per_sm"}},
          {"rows", rows},
          {"notes",
           {"every thread runs one chain of " + std::to_string(kChainIterations * kChainUnroll) +
                " dependent fp32 FMAs; the paths differ in their constants, so each is its own code (a 32-case "
                "switch)",
            "grid: " + std::to_string(kBlocksPerSm) + " blocks of " + std::to_string(kBlock) +
                " threads per SM (one full wave); the same total work at every k and in both layouts",
            "slowdown_vs_1_path: the median time over the same layout's 1-path time",
            "useful_fma_per_clock_per_sm: FMAs of active lanes per SM cycle at the " +
                format_fixed(context.device.sm_clock_khz * 1e-3, 0) +
                " MHz peak SM clock (the FP32 pipes' peak is 128); masked-off lanes do no useful work",
            "every thread's result is compared, bit for bit, with the host's fp32 FMA chain of its path"}}};
}

const nlohmann::json* divergence_row(const nlohmann::json& table, int paths, bool warp_aligned) {
  for (const auto& row : table["rows"])
    if (row[0] == paths && row[1] == layout_name(warp_aligned)) return &row;
  return nullptr;
}

double slowdown(const nlohmann::json* row) { return (*row)[4].get<double>(); }

// C22: 2 paths make a warp 2x slower, 4 paths 4x, 32 paths 32x. One slowdown part per stated
// count, each the divergent layout's time over its 1-path time; the warp-aligned layout, the same
// paths without divergence, is reported beside them (it should stay near 1x).
nlohmann::json claim_c22(const nlohmann::json& results) {
  const auto* table = experiment(results, execution_ids::kWarpDivergence);
  if (table == nullptr) return nullptr;
  const int stated[] = {2, 4, 32};
  std::vector<PartVerdict> parts;
  std::string lane_words, warp_words;
  for (const int paths : stated) {
    const auto* lane = divergence_row(*table, paths, false);
    const auto* warp = divergence_row(*table, paths, true);
    if (lane == nullptr || warp == nullptr) return nullptr;
    const std::string sep = lane_words.empty() ? "" : " / ";
    lane_words += sep + format_fixed(slowdown(lane), 2) + "x";
    warp_words += sep + format_fixed(slowdown(warp), 2) + "x";
    parts.push_back(judge_ratio(std::to_string(paths) + " paths: " + std::to_string(paths) + "x slower",
                                static_cast<double>(paths), slowdown(lane)));
  }
  return claim_verdict("C22", "2, 4 and 32 paths in a warp: 2x, 4x and 32x the 1-path time",
                       "paths by lane (2 / 4 / 32 paths): " + lane_words +
                           " the 1-path time; the same paths aligned to warps: " + warp_words,
                       parts);
}

}  // namespace

void register_divergence(Registry& registry) {
  registry.add(Experiment{
      execution_ids::kWarpDivergence, execution_ids::kPage,
      "warp divergence: 1..32 code paths per warp against the same paths aligned to warps "
      "(claim C22)",
      run_warp_divergence,
      nlohmann::json::array({{{"title", "Warp divergence: slowdown against the paths per warp"},
                              {"x", "paths"},
                              {"y", "slowdown_vs_1_path"},
                              {"series", "layout"},
                              {"x_log", true},
                              {"y_log", true},
                              {"y_label", "time / 1-path time"},
                              {"predicted", predicted_points("tutorial 000 (C22)", {{2, 2}, {4, 4}, {32, 32}})}}})});
  registry.add(ClaimCheck{"C22", execution_ids::kPage, {}, claim_c22});
}

}  // namespace cudalab::harness::execution_experiments
