// Occupancy (claim C23): how the number of resident threads changes the time of a fixed amount of
// work. Two kernels, each a grid-stride loop so every launch shape does the same total work:
//   stream     reads 256 MiB, one 16-byte load in flight per thread (memory-bound: the bytes in
//              flight, and so the bandwidth, grow with the resident threads until DRAM saturates);
//   fma_chain  512 dependent FMAs per item (latency-bound: a warp waits ~4 cycles per FMA, so a
//              scheduler needs several warps before its FMA pipe is busy).
// Shapes: the tutorial's <<<10,64>>> and <<<80,256>>>, block sizes 32..1024 at a grid that fills
// every SM, grids from one block per SM to many waves, and 256-thread blocks whose residency is
// capped at 1..8 per SM by dynamic shared memory they do not use (occupancy as the only change).
// A third kernel with 16 independent loads per thread, compiled under three __launch_bounds__
// register caps, shows what registers cost in occupancy and what the lost loads in flight cost.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/format.hpp"
#include "core/launch.cuh"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/experiment_support.hpp"
#include "harness/registry.hpp"
#include "harness/timer.hpp"
#include "ops/execution/ids.hpp"

namespace cudalab::harness::execution_experiments {
namespace {

constexpr std::int64_t kStreamWords = std::int64_t{64} << 20;  // 256 MiB of uint32: 5x the H100's L2
constexpr std::int64_t kStreamVectors = kStreamWords / 4;
constexpr std::int64_t kChainItems = std::int64_t{1} << 22;
constexpr int kChainLength = 512;
constexpr float kChainA = 0.999f, kChainB = 0.25f;  // x stays in [0, 250]: no overflow, no denormals
constexpr int kChainSeeds = 64;                     // item i starts at x = i % 64
constexpr int kSweepBlock = 256;
constexpr int kIlpLoads = 16;

[[noreturn]] void data_check_failed(const std::string& what) {
  harness::data_check_failed(execution_ids::kOccupancy, what);
}

__host__ __device__ inline std::uint32_t stream_word(std::int64_t i, std::uint32_t seed) {
  return static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
}

__global__ void occupancy_fill_kernel(std::uint32_t* words, std::int64_t n, std::uint32_t seed) {
  for (std::int64_t i = global_thread_index(); i < n; i += global_thread_count()) words[i] = stream_word(i, seed);
}

// One atomic per warp: the sum (mod 2^32) the host checks, at a cost of a few atomics per launch.
// Every launch shape here has whole warps, so the full-mask shuffle is safe.
__device__ __forceinline__ void add_warp_sum(std::uint32_t sum, std::uint32_t* total) {
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(total, sum);
}

// Memory-bound: `unroll 1` keeps exactly one 16-byte load per thread in flight (the add waits for
// it before the next load issues), so bandwidth follows the number of resident warps.
__global__ void occupancy_stream_kernel(const uint4* __restrict__ in, std::int64_t n, std::uint32_t* total) {
  std::uint32_t sum = 0;
  const std::int64_t stride = global_thread_count();
#pragma unroll 1
  for (std::int64_t i = global_thread_index(); i < n; i += stride) {
    const uint4 v = in[i];
    sum += v.x + v.y + v.z + v.w;
  }
  add_warp_sum(sum, total);
}

// Latency-bound: each FMA waits for the previous one; `a` and `b` are run-time values, so the
// chain cannot be folded. The items of one thread run one after another (outer loop not unrolled).
__global__ void occupancy_fma_chain_kernel(std::int64_t items, int chain, float a, float b, float* out) {
  const std::int64_t stride = global_thread_count();
#pragma unroll 1
  for (std::int64_t i = global_thread_index(); i < items; i += stride) {
    float x = static_cast<float>(i % kChainSeeds);
#pragma unroll 16
    for (int k = 0; k < chain; ++k) x = fmaf(x, a, b);
    out[i] = x;
  }
}

// The same streaming sum with kIlpLoads independent loads per thread per step: uncapped, the
// compiler holds all of them in registers (more bytes in flight per thread, more registers);
// __launch_bounds__(256, kMinBlocks) caps registers at 65536 / (256 * kMinBlocks), and the
// compiler then keeps fewer loads in flight rather than spilling.
template <int kMinBlocks>
__global__ void __launch_bounds__(kSweepBlock, kMinBlocks)
    occupancy_ilp_stream_kernel(const uint4* __restrict__ in, std::int64_t n, std::uint32_t* total) {
  std::uint32_t sum = 0;
  const std::int64_t stride = global_thread_count();
  std::int64_t i = global_thread_index();
  for (; i + (kIlpLoads - 1) * stride < n; i += kIlpLoads * stride) {
    uint4 v[kIlpLoads];
#pragma unroll
    for (int k = 0; k < kIlpLoads; ++k) v[k] = in[i + k * stride];
#pragma unroll
    for (int k = 0; k < kIlpLoads; ++k) sum += v[k].x + v[k].y + v[k].z + v[k].w;
  }
  for (; i < n; i += stride) {
    const uint4 v = in[i];
    sum += v.x + v.y + v.z + v.w;
  }
  add_warp_sum(sum, total);
}

struct Kernel {
  std::string name;
  const void* function;
  std::function<void(int blocks, int threads, std::size_t smem, cudaStream_t)> launch;
  std::function<void(int blocks, int threads, std::size_t smem)> check;  // one launch, its result verified
};

struct Point {
  std::string kernel, sweep, launch;
  int blocks = 0, threads = 0, registers = 0, blocks_per_sm = 0;
  std::size_t smem = 0;
  double occupancy_pct = 0, grid_occupancy_pct = 0, median_us = 0;
};

std::string shape(int blocks, int threads) {
  return "<<<" + std::to_string(blocks) + "," + std::to_string(threads) + ">>>";
}

nlohmann::json run_occupancy(const ExperimentContext& context) {
  const int sms = context.device.sm_count;
  const int max_threads_sm = context.device.max_threads_per_sm;
  const std::uint32_t seed = static_cast<std::uint32_t>(context.seed) | 1u;
  Stream stream;
  const cudaStream_t s = stream.get();
  KernelTimer timer;

  DeviceBuffer<std::uint32_t> words(kStreamWords), total(1);
  DeviceBuffer<float> chain_out(kChainItems);
  occupancy_fill_kernel<<<sms * 8, 256, 0, s>>>(words.data(), kStreamWords, seed);
  CUDALAB_CUDA_CHECK(cudaGetLastError());
  std::uint32_t expected_sum = 0;
  for (std::int64_t i = 0; i < kStreamWords; ++i) expected_sum += stream_word(i, seed);
  float chain_expected[kChainSeeds];
  for (int r = 0; r < kChainSeeds; ++r) {
    float x = static_cast<float>(r);
    for (int k = 0; k < kChainLength; ++k) x = std::fma(x, kChainA, kChainB);
    chain_expected[r] = x;
  }
  const auto* vectors = reinterpret_cast<const uint4*>(words.data());
  std::uint32_t* const total_ptr = total.data();
  std::vector<float> host_chain(static_cast<std::size_t>(kChainItems));

  auto check_sum = [&](const std::string& what, const std::function<void()>& launch) {
    CUDALAB_CUDA_CHECK(cudaMemsetAsync(total.data(), 0, sizeof(std::uint32_t), s));
    launch();
    CUDALAB_CUDA_CHECK(cudaGetLastError());
    std::uint32_t got = 0;
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(&got, total.data(), sizeof got, cudaMemcpyDeviceToHost, s));
    stream.synchronize();
    if (got != expected_sum)
      data_check_failed(what + ": sum " + std::to_string(got) + ", expected " + std::to_string(expected_sum));
  };
  auto stream_kernel = [&](const std::string& name, auto function) {
    Kernel k;
    k.name = name;
    k.function = reinterpret_cast<const void*>(function);
    k.launch = [=](int blocks, int threads, std::size_t smem, cudaStream_t st) {
      function<<<blocks, threads, smem, st>>>(vectors, kStreamVectors, total_ptr);
    };
    k.check = [&, launch = k.launch, name](int blocks, int threads, std::size_t smem) {
      check_sum(name + " " + shape(blocks, threads), [&] { launch(blocks, threads, smem, s); });
    };
    return k;
  };
  Kernel stream_sum = stream_kernel("stream", occupancy_stream_kernel);
  Kernel chain;
  chain.name = "fma_chain";
  chain.function = reinterpret_cast<const void*>(occupancy_fma_chain_kernel);
  chain.launch = [&](int blocks, int threads, std::size_t smem, cudaStream_t st) {
    occupancy_fma_chain_kernel<<<blocks, threads, smem, st>>>(kChainItems, kChainLength, kChainA, kChainB,
                                                              chain_out.data());
  };
  chain.check = [&](int blocks, int threads, std::size_t smem) {
    CUDALAB_CUDA_CHECK(cudaMemsetAsync(chain_out.data(), 0xff, chain_out.bytes(), s));  // NaN: unwritten fails
    chain.launch(blocks, threads, smem, s);
    CUDALAB_CUDA_CHECK(cudaGetLastError());
    CUDALAB_CUDA_CHECK(
        cudaMemcpyAsync(host_chain.data(), chain_out.data(), chain_out.bytes(), cudaMemcpyDeviceToHost, s));
    stream.synchronize();
    for (std::int64_t i = 0; i < kChainItems; ++i)
      if (std::memcmp(&host_chain[i], &chain_expected[i % kChainSeeds], sizeof(float)) != 0)
        data_check_failed("fma_chain " + shape(blocks, threads) + ": item " + std::to_string(i));
  };
  // Dynamic shared memory caps residency in the occupancy sweep; allow it past the 48 KiB default.
  for (const void* f : {stream_sum.function, chain.function})
    CUDALAB_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(context.device.shared_memory_per_block_optin)));

  int device = 0, attribute = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&attribute, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  const std::size_t smem_per_sm = static_cast<std::size_t>(attribute);
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&attribute, cudaDevAttrReservedSharedMemoryPerBlock, device));
  const std::size_t smem_reserved = static_cast<std::size_t>(attribute);
  const std::size_t smem_per_block_max = context.device.shared_memory_per_block_optin;

  std::vector<Point> points;
  std::map<std::tuple<const void*, int, int, std::size_t>, double> timed;  // a shape timed once per kernel
  auto measure = [&](const Kernel& k, const std::string& sweep, const std::string& launch, int blocks, int threads,
                     std::size_t smem) {
    Point p;
    p.kernel = k.name;
    p.sweep = sweep;
    p.launch = launch.empty() ? shape(blocks, threads) : launch;
    p.blocks = blocks;
    p.threads = threads;
    p.smem = smem;
    cudaFuncAttributes attributes{};
    CUDALAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, k.function));
    p.registers = attributes.numRegs;
    CUDALAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p.blocks_per_sm, k.function, threads, smem));
    p.occupancy_pct = 100.0 * p.blocks_per_sm * threads / max_threads_sm;
    const std::int64_t first_wave = std::min<std::int64_t>(blocks, static_cast<std::int64_t>(p.blocks_per_sm) * sms);
    p.grid_occupancy_pct =
        100.0 * static_cast<double>(first_wave) * threads / (static_cast<double>(sms) * max_threads_sm);
    const auto key = std::make_tuple(k.function, blocks, threads, smem);
    auto it = timed.find(key);
    if (it == timed.end()) {
      if (context.progress) context.progress(std::string(execution_ids::kOccupancy) + " " + k.name + " " + p.launch);
      k.check(blocks, threads, smem);
      const Summary t = timer.time([&](cudaStream_t st) { k.launch(blocks, threads, smem, st); }, s, sweep_timing());
      it = timed.emplace(key, t.median * 1e3).first;
    }
    p.median_us = it->second;
    points.push_back(p);
  };
  auto resident_blocks = [&](const Kernel& k, int threads) {
    int per_sm = 0;
    CUDALAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.function, threads, 0));
    return std::max(per_sm, 1) * sms;
  };

  for (const Kernel* k : {&stream_sum, &chain}) {
    // The tutorial's two shapes: same work, 32x the threads.
    measure(*k, "tutorial", "", 10, 64, 0);
    measure(*k, "tutorial", "", 80, 256, 0);
    // Block sizes at a grid that fills every SM to the occupancy limit.
    for (int threads : {32, 64, 128, 256, 512, 1024})
      measure(*k, "block size", "", resident_blocks(*k, threads), threads, 0);
    // Grids of 256-thread blocks from one per SM (1/8 of the resident limit) to many waves.
    for (int per_sm : {1, 2, 4, 8, 16, 64}) measure(*k, "grid", "", per_sm * sms, kSweepBlock, 0);
    const std::int64_t items = k == &stream_sum ? kStreamVectors : kChainItems;
    const int one_each = static_cast<int>(ceil_div<std::int64_t>(items, kSweepBlock));
    measure(*k, "grid", shape(one_each, kSweepBlock) + " one item per thread", one_each, kSweepBlock, 0);
    // Occupancy alone: 256-thread blocks, 1..max resident per SM, set by dynamic shared memory
    // the kernel never touches: the most a block can ask for while `target` blocks still fit.
    int most = 0;
    CUDALAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&most, k->function, kSweepBlock, 0));
    for (int target = 1; target <= most; ++target) {
      std::size_t smem = 0;
      if (target < most) {
        smem = std::min(smem_per_block_max, smem_per_sm / target - smem_reserved);
        smem -= smem % 1024;
        for (int step = 0; step < 64; ++step) {  // the API has the last word on what fits
          int fit = 0;
          CUDALAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, k->function, kSweepBlock, smem));
          if (fit == target || (fit < target && smem < 1024)) break;
          smem = fit < target ? smem - 1024 : std::min(smem_per_block_max, smem + 1024);
        }
      }
      measure(*k, "occupancy", "", target * sms, kSweepBlock, smem);
    }
    // What the runtime suggests: the block size that maximises occupancy, and the grid that fills the GPU.
    int min_grid = 0, suggested = 0;
    CUDALAB_CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &suggested, k->function, 0, 0));
    measure(*k, "api suggestion", "", min_grid, suggested, 0);
  }
  // Registers: 16 loads in flight per thread, under three register caps.
  const Kernel uncapped = stream_kernel("stream_ilp16", occupancy_ilp_stream_kernel<1>);
  const Kernel cap64 = stream_kernel("stream_ilp16", occupancy_ilp_stream_kernel<4>);
  const Kernel cap32 = stream_kernel("stream_ilp16", occupancy_ilp_stream_kernel<8>);
  const std::pair<const Kernel*, const char*> capped[] = {{&uncapped, "__launch_bounds__(256, 1)"},
                                                          {&cap64, "__launch_bounds__(256, 4)"},
                                                          {&cap32, "__launch_bounds__(256, 8)"}};
  for (const auto& [k, bounds] : capped)
    measure(*k, "registers", bounds, resident_blocks(*k, kSweepBlock), kSweepBlock, 0);

  // Relative speed: against the same kernel at its highest occupancy in the occupancy sweep.
  std::map<std::string, double> reference_us;
  for (const Point& p : points)
    if (p.sweep == "occupancy" && p.smem == 0) reference_us[p.kernel] = p.median_us;
  reference_us["stream_ilp16"] = reference_us["stream"];
  nlohmann::json rows = nlohmann::json::array();
  std::map<std::string, const Point*> best;
  for (const Point& p : points) {
    rows.push_back({p.kernel, p.sweep, p.launch, p.blocks, p.threads, p.registers, p.smem, p.blocks_per_sm,
                    p.occupancy_pct, p.grid_occupancy_pct, p.median_us, reference_us[p.kernel] / p.median_us,
                    p.sweep == "occupancy" ? nlohmann::json(p.median_us) : nlohmann::json("-")});
    if (best.count(p.kernel) == 0 || p.median_us < best[p.kernel]->median_us) best[p.kernel] = &p;
  }
  nlohmann::json notes = {
      "stream: sum of 256 MiB of uint32 (uint4 loads, one in flight per thread); fma_chain: " +
          std::to_string(kChainItems) + " items, each " + std::to_string(kChainLength) +
          " dependent FMAs; stream_ilp16: the stream with 16 independent loads per thread per step. Every shape "
          "does the same total work (grid-stride loops).",
      "theoretical_occupancy_pct: cudaOccupancyMaxActiveBlocksPerMultiprocessor x threads / " +
          std::to_string(max_threads_sm) +
          " threads per SM; grid_occupancy_pct: the share of all thread slots the grid's first wave fills "
          "(a grid smaller than the GPU leaves SMs idle whatever the theoretical figure)",
      "occupancy sweep: 256-thread blocks, a grid of (resident blocks per SM) x SMs; the dynamic shared memory each "
      "block asks for (and never touches) is what limits residency, so occupancy is the only thing that changes; "
      "the plotted line",
      "registers: cudaFuncGetAttributes numRegs; __launch_bounds__(256, m) caps registers at 65536 / (256 m), "
      "which the compiler meets by keeping fewer loads in flight (no spills: the build warns on any)",
      "relative_speed: the kernel's time at its highest occupancy in the occupancy sweep over this row's time "
      "(stream_ilp16 against stream)",
      "median_us: CUDA-event time per launch, L2 flushed before each; each shape's result is checked once (the "
      "stream's sum mod 2^32, every fma_chain item bit for bit)"};
  for (const Point& p : points)
    if (p.sweep == "api suggestion")
      notes.push_back("cudaOccupancyMaxPotentialBlockSize for " + p.kernel + ": " + p.launch + ", " +
                      format_fixed(p.median_us, 1) + " us; fastest shape measured: " + best[p.kernel]->launch + " (" +
                      best[p.kernel]->sweep + "), " + format_fixed(best[p.kernel]->median_us, 1) + " us");
  return {
      {"name", execution_ids::kOccupancy},
      {"op", execution_ids::kPage},
      {"summary",
       "a memory-bound and a latency-bound kernel over launch shapes, block sizes, grids, occupancy set by "
       "shared memory, and register caps (claim C23)"},
      {"columns",
       {"kernel", "sweep", "launch", "blocks", "threads_per_block", "registers", "dynamic_smem_bytes", "blocks_per_sm",
        "theoretical_occupancy_pct", "grid_occupancy_pct", "median_us", "relative_speed", "occupancy_sweep_us"}},
      {"rows", rows},
      {"notes", notes}};
}

// C23: three parts. (1) The tutorial's <<<10,64>>> 100 ms against <<<80,256>>> 35 ms is a 2.86x
// slowdown, judged on the stream kernel's two tutorial shapes. (2) "64 registers/thread halves
// occupancy": the theoretical occupancy of the 16-load stream capped at 32 registers over the same
// kernel capped at 64 (a 2x ratio; the registers actually used are in the words). (3) "Above ~50%
// occupancy more does not pay": the stream's speed at its highest occupancy over its speed at the
// occupancy nearest half of that, in the shared-memory sweep; "does not pay" is the range 0.95-1.1.
nlohmann::json claim_c23(const nlohmann::json& results) {
  const auto* table = experiment(results, execution_ids::kOccupancy);
  if (table == nullptr) return nullptr;
  const int kernel = column_index(*table, "kernel"), sweep = column_index(*table, "sweep"),
            launch = column_index(*table, "launch"), registers = column_index(*table, "registers"),
            occupancy = column_index(*table, "theoretical_occupancy_pct"), median = column_index(*table, "median_us");
  if (kernel < 0 || sweep < 0 || launch < 0 || registers < 0 || occupancy < 0 || median < 0) return nullptr;
  auto find = [&](const std::string& k, const std::string& sw, const std::string& l) -> const nlohmann::json* {
    for (const auto& row : (*table)["rows"])
      if (row[kernel] == k && row[sweep] == sw && row[launch] == l) return &row;
    return nullptr;
  };
  const auto* small = find("stream", "tutorial", "<<<10,64>>>");
  const auto* large = find("stream", "tutorial", "<<<80,256>>>");
  const auto* chain_small = find("fma_chain", "tutorial", "<<<10,64>>>");
  const auto* chain_large = find("fma_chain", "tutorial", "<<<80,256>>>");
  const auto* regs64 = find("stream_ilp16", "registers", "__launch_bounds__(256, 4)");
  const auto* regs32 = find("stream_ilp16", "registers", "__launch_bounds__(256, 8)");
  const nlohmann::json *full = nullptr, *half = nullptr;
  for (const auto& row : (*table)["rows"])
    if (row[kernel] == "stream" && row[sweep] == "occupancy" &&
        (full == nullptr || row[occupancy].get<double>() > (*full)[occupancy].get<double>()))
      full = &row;
  if (small == nullptr || large == nullptr || regs64 == nullptr || regs32 == nullptr || full == nullptr) return nullptr;
  const double full_pct = (*full)[occupancy].get<double>();
  for (const auto& row : (*table)["rows"])
    if (row[kernel] == "stream" && row[sweep] == "occupancy" &&
        (half == nullptr || std::fabs(row[occupancy].get<double>() - full_pct / 2) <
                                std::fabs((*half)[occupancy].get<double>() - full_pct / 2)))
      half = &row;
  auto us = [&](const nlohmann::json* row) { return (*row)[median].get<double>(); };
  auto pct = [&](const nlohmann::json* row) { return (*row)[occupancy].get<double>(); };
  const double tutorial = us(small) / us(large);
  const double occupancy_ratio = pct(regs32) / pct(regs64);
  const double more_pays = us(half) / us(full);  // speed at full over speed at half
  std::string measured = "stream <<<10,64>>> " + format_fixed(us(small) / 1e3, 2) + " ms vs <<<80,256>>> " +
                         format_fixed(us(large) / 1e3, 3) + " ms (" + format_fixed(tutorial, 1) + "x)";
  if (chain_small != nullptr && chain_large != nullptr)
    measured += "; fma_chain " + format_fixed(us(chain_small) / us(chain_large), 1) + "x";
  measured += "; 16-load stream capped at " + std::to_string((*regs64)[registers].get<int>()) +
              " registers: " + format_fixed(pct(regs64), 1) + "% theoretical occupancy, at " +
              std::to_string((*regs32)[registers].get<int>()) + ": " + format_fixed(pct(regs32), 1) + "% (" +
              format_fixed(occupancy_ratio, 2) + "x); stream at " + format_fixed(full_pct, 1) + "% occupancy " +
              format_fixed(more_pays, 2) + "x the speed at " + format_fixed(pct(half), 1) + "%";
  return claim_verdict("C23",
                       "<<<10,64>>> 2.86x slower than <<<80,256>>>; 32 registers give 2x the occupancy of 64; "
                       "100% occupancy runs 0.95-1.1x the speed of 50%",
                       measured,
                       {judge_ratio("<<<10,64>>> 100 ms vs <<<80,256>>> 35 ms (2.86x)", 100.0 / 35.0, tutorial),
                        judge_ratio("64 registers/thread halves occupancy (2x)", 2.0, occupancy_ratio),
                        judge_range("above ~50% occupancy more does not pay (0.95-1.1x)", 0.95, 1.1, more_pays)});
}

}  // namespace

void register_occupancy(Registry& registry) {
  registry.add(Experiment{execution_ids::kOccupancy, execution_ids::kPage,
                          "occupancy: launch shapes, block sizes, grids, shared-memory-limited occupancy and "
                          "register caps for a memory-bound and a latency-bound kernel (claim C23)",
                          run_occupancy,
                          nlohmann::json::array({{{"title", "Time against theoretical occupancy (256-thread blocks)"},
                                                  {"x", "theoretical_occupancy_pct"},
                                                  {"y", "occupancy_sweep_us"},
                                                  {"series", "kernel"},
                                                  {"y_log", false},
                                                  {"y_label", "median time per launch (us)"}}})});
  registry.add(ClaimCheck{"C23", execution_ids::kPage, {}, claim_c23});
}

}  // namespace cudalab::harness::execution_experiments
