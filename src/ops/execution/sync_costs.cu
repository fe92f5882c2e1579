// Costs of synchronisation and atomics (claim C24), each in SM cycles and ns per operation:
// barriers (__syncthreads, a cooperative grid.sync() against a kernel boundary), fences, atomicAdd
// on shared and global memory from uncontended to every thread on one address, warp votes against
// a shared-memory flag, and the host's cudaDeviceSynchronize. In-kernel costs come from clock64()
// around a long unrolled loop of the operation; where the loop needs glue to keep the operation
// alive (a dependent operand, a predicate), the same loop without the operation is timed too and
// subtracted. The intermediate course's unprotected shared counter is run beside atomicAdd's,
// broken on purpose, to show the count it loses.
#include <cooperative_groups.h>
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/experiment_support.hpp"
#include "harness/registry.hpp"
#include "harness/statistics.hpp"
#include "ops/execution/ids.hpp"

namespace cudalab::harness::execution_experiments {
namespace {

namespace cg = cooperative_groups;

constexpr int kBarrierIterations = 8192;
constexpr int kFenceIterations = 2048;  // a multiple of 16: the store pattern repeats every 16
constexpr int kAtomicThreads = 256;
constexpr int kAtomicWarm = 8;
constexpr int kAtomicIterations = 1024;
constexpr int kVoteIterations = 8192;
constexpr int kGridSyncIterations = 1000;
constexpr int kGridSyncCheckIterations = 64;
constexpr int kBoundaryLaunches = 1000;
constexpr int kLaunchRepeats = 5;  // in-kernel timings: the first launch warms up, the median of the rest

// Row labels, shared by the table and the claim that reads it.
constexpr char kSyncthreads[] = "__syncthreads";
constexpr char kFence[] = "__threadfence";
constexpr char kFenceAfterStore[] = "after a global store";
constexpr char kSharedAtomic[] = "atomicAdd, shared";
constexpr char kGlobalAtomic[] = "atomicAdd, global";
constexpr char kUncontended[] = "uncontended";
constexpr char kFullContention[] = "full: 256 threads, one address";
constexpr char kDeviceSync[] = "cudaDeviceSynchronize";
constexpr char kIdle[] = "idle device";

[[noreturn]] void data_check_failed(const std::string& what) {
  harness::data_check_failed(execution_ids::kSyncCosts, what);
}

// One block: thread 0's cycles for `iterations` barriers (nothing else in the unrolled loop).
__global__ void syncthreads_kernel(int iterations, long long* cycles) {
  for (int i = 0; i < 8; ++i) __syncthreads();
  const long long begin = clock64();
#pragma unroll 16
  for (int i = 0; i < iterations; ++i) __syncthreads();
  const long long end = clock64();
  if (threadIdx.x == 0) *cycles = end - begin;
}

// One warp. kStore: each iteration stores (volatile, so none is merged away) to one of 16 slots
// per lane; kFence: each iteration ends in __threadfence(). Fence after store minus store alone is
// what a fence costs when it has a store to wait for (publishing data before a flag).
template <bool kStore, bool kFence>
__global__ void threadfence_kernel(volatile unsigned* slots, int iterations, long long* cycles) {
  volatile unsigned* mine = slots + threadIdx.x;
  const long long begin = clock64();
#pragma unroll 16
  for (int i = 0; i < iterations; ++i) {
    if (kStore) mine[(i % 16) * 32] = static_cast<unsigned>(i);
    if (kFence) __threadfence();
  }
  const long long end = clock64();
  if (threadIdx.x == 0) *cycles = end - begin;
}

// One step of a dependent chain: the operand depends on the last atomic's old value (it is 1 while
// counts stay below 2^31, which the compiler cannot know), so each atomic waits for the previous
// one's return: the latency one thread sees. Without kAtomic the step is the glue alone; the
// empty asm keeps the compiler from folding the chain of glue.
template <bool kAtomic>
__device__ __forceinline__ unsigned chain_step(unsigned* target, unsigned v) {
  const unsigned add = 1u + (v >> 31);
  if constexpr (kAtomic) {
    return atomicAdd(target, add);
  } else {
    unsigned next = add;
    asm volatile("" : "+r"(next));
    return next;
  }
}

// One block of kAtomicThreads; thread t adds to slot t / ways (ways lanes share an address), in
// shared or global memory. counters[t] ends with the count of slot t; last[t] the chain's value.
template <bool kShared, bool kAtomic>
__global__ void atomic_chain_kernel(unsigned* counters, int ways, int iterations, long long* cycles, unsigned* last) {
  __shared__ unsigned shared_counters[kAtomicThreads];
  const int slot = static_cast<int>(threadIdx.x) / ways;
  if constexpr (kShared) {
    shared_counters[threadIdx.x] = 0;
    __syncthreads();
  }
  unsigned* target = kShared ? shared_counters + slot : counters + slot;
  unsigned v = 0;
  for (int i = 0; i < kAtomicWarm; ++i) v = chain_step<kAtomic>(target, v);
  __syncthreads();
  const long long begin = clock64();
#pragma unroll 8
  for (int i = 0; i < iterations; ++i) v = chain_step<kAtomic>(target, v);
  const long long end = clock64();
  cycles[threadIdx.x] = end - begin;
  last[threadIdx.x] = v;
  if constexpr (kShared) {
    __syncthreads();
    counters[threadIdx.x] = shared_counters[threadIdx.x];
  }
}

enum VoteKind : int { kVoteNone, kVoteBallot, kVoteAll, kVoteSharedFlag };

// One warp; x advances by 1 + (a vote on a predicate of x and the lane: the ballot's mask, or
// `all` as 0/1), so each vote waits for the last. kVoteNone: the lane's own predicate, no vote (the glue to subtract).
// The shared flag is the vote done by hand: set, clear where the predicate fails, read back, with __syncwarp() between.
template <int kKind>
__global__ void vote_chain_kernel(unsigned x0, int iterations, long long* cycles, unsigned* out) {
  __shared__ unsigned flag;
  volatile unsigned* shared_flag = &flag;
  const unsigned lane = threadIdx.x & 31;
  unsigned x = x0;
  const long long begin = clock64();
#pragma unroll 8
  for (int i = 0; i < iterations; ++i) {
    const bool p = ((x + lane) & 31u) != 0;
    unsigned r;
    if constexpr (kKind == kVoteNone) {
      r = p;
    } else if constexpr (kKind == kVoteBallot) {
      r = __ballot_sync(0xffffffffu, p);
    } else if constexpr (kKind == kVoteAll) {
      r = static_cast<unsigned>(__all_sync(0xffffffffu, p));
    } else {
      if (lane == 0) *shared_flag = 1u;
      __syncwarp();
      if (!p) *shared_flag = 0u;
      __syncwarp();
      r = *shared_flag;
      __syncwarp();
    }
    x += 1u + r;
  }
  const long long end = clock64();
  if (threadIdx.x == 0) *cycles = end - begin;
  out[threadIdx.x] = x;
}

__global__ void grid_sync_kernel(int iterations, long long* cycles) {
  cg::grid_group grid = cg::this_grid();
  grid.sync();  // every block is running
  const long long begin = clock64();
  for (int i = 0; i < iterations; ++i) grid.sync();
  const long long end = clock64();
  if (blockIdx.x == 0 && threadIdx.x == 0) *cycles = end - begin;
}

// Checks the barrier: after sync i, block 0 must see every block's i+1 arrivals.
__global__ void grid_sync_check_kernel(int iterations, unsigned* arrivals, unsigned* early) {
  cg::grid_group grid = cg::this_grid();
  for (int i = 0; i < iterations; ++i) {
    if (threadIdx.x == 0) atomicAdd(arrivals, 1u);
    grid.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0 && atomicAdd(arrivals, 0u) < (i + 1) * gridDim.x) atomicAdd(early, 1u);
  }
}

__global__ void empty_kernel() {}

// The intermediate course's shared counter: every thread does counter++ (load, add, store), so the
// lanes of a warp all read the same value and the warp adds 1, not 32. Broken on purpose.
__global__ void unprotected_counter_kernel(int* counts) {
  __shared__ int counter;
  if (threadIdx.x == 0) counter = 0;
  __syncthreads();
  counter++;
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = counter;
}

__global__ void atomic_counter_kernel(int* counts) {
  __shared__ int counter;
  if (threadIdx.x == 0) counter = 0;
  __syncthreads();
  atomicAdd(&counter, 1);
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = counter;
}

template <typename T>
std::vector<T> fetch(const DeviceBuffer<T>& buffer, cudaStream_t stream) {
  CUDALAB_CUDA_CHECK(cudaGetLastError());
  std::vector<T> host(static_cast<std::size_t>(buffer.size()));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost, stream));
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// Runs `launch_and_read` kLaunchRepeats times (it launches, checks, and returns the cycles per
// operation of that launch); the first launch only warms up.
double median_of_launches(const std::function<double()>& launch_and_read) {
  std::vector<double> samples;
  for (int r = 0; r < kLaunchRepeats; ++r) {
    const double value = launch_and_read();
    if (r > 0) samples.push_back(value);
  }
  return summarize(samples).median;
}

// Host wall time per call of `call`, in ns: the median over batches of `per_batch` calls.
double host_ns_per_call(const std::function<void()>& call, int per_batch) {
  std::vector<double> samples;
  for (int batch = 0; batch < 6; ++batch) {
    const auto begin = std::chrono::steady_clock::now();
    for (int i = 0; i < per_batch; ++i) call();
    const auto end = std::chrono::steady_clock::now();
    if (batch > 0) samples.push_back(std::chrono::duration<double, std::nano>(end - begin).count() / per_batch);
  }
  return summarize(samples).median;
}

nlohmann::json run_sync_costs(const ExperimentContext& context) {
  const double sm_ghz = context.device.sm_clock_khz * 1e-6;
  const int sms = context.device.sm_count;
  Stream stream;
  const cudaStream_t s = stream.get();
  DeviceBuffer<long long> cycles(kAtomicThreads);
  // Kernels that time in one thread write one entry; the rest stay defined for the copies back.
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(cycles.data(), 0, cycles.bytes(), s));
  nlohmann::json rows = nlohmann::json::array();
  // A row measured in SM cycles (ns at the peak clock) or in host ns (cycles at the peak clock).
  auto cycles_row = [&](const std::string& op, const std::string& setting, double per_op, const std::string& timed_by,
                        const nlohmann::json& check, const nlohmann::json& got, const nlohmann::json& right) {
    per_op = std::max(per_op, 0.0);
    rows.push_back({op, setting, per_op, per_op / sm_ghz, timed_by, check, got, right});
  };
  auto ns_row = [&](const std::string& op, const std::string& setting, double ns, const std::string& timed_by,
                    const nlohmann::json& check) {
    rows.push_back({op, setting, ns * sm_ghz, ns, timed_by, check, "-", "-"});
  };
  auto progress = [&](const std::string& what) {
    if (context.progress) context.progress(std::string(execution_ids::kSyncCosts) + " " + what);
  };

  // __syncthreads: one block, thread 0's count.
  progress(kSyncthreads);
  for (int threads : {256, 1024}) {
    const double per_op = median_of_launches([&] {
      syncthreads_kernel<<<1, threads, 0, s>>>(kBarrierIterations, cycles.data());
      return static_cast<double>(fetch(cycles, s)[0]) / kBarrierIterations;
    });
    cycles_row(kSyncthreads, "block of " + std::to_string(threads), per_op, "clock64", "no result to check", "-", "-");
  }

  // __threadfence: one warp, with and without a store to wait for.
  progress(kFence);
  {
    DeviceBuffer<unsigned> slots(16 * 32);
    auto fence_cycles = [&](auto kernel, bool stores) {
      return median_of_launches([&] {
        CUDALAB_CUDA_CHECK(cudaMemsetAsync(slots.data(), 0xff, slots.bytes(), s));
        kernel<<<1, 32, 0, s>>>(slots.data(), kFenceIterations, cycles.data());
        const double per_op = static_cast<double>(fetch(cycles, s)[0]) / kFenceIterations;
        const auto stored = fetch(slots, s);
        for (int k = 0; stores && k < 16; ++k)
          for (int lane = 0; lane < 32; ++lane)
            if (stored[k * 32 + lane] != static_cast<unsigned>(kFenceIterations - 16 + k))
              data_check_failed("__threadfence: slot " + std::to_string(k) + " lane " + std::to_string(lane));
        return per_op;
      });
    };
    const double fence_only = fence_cycles(threadfence_kernel<false, true>, false);
    const double store_fence = fence_cycles(threadfence_kernel<true, true>, true);
    const double store_only = fence_cycles(threadfence_kernel<true, false>, true);
    cycles_row(kFence, "no pending stores", fence_only, "clock64", "no result to check", "-", "-");
    cycles_row(kFence, kFenceAfterStore, store_fence - store_only, "clock64 (store alone subtracted)",
               "ok: the stores landed", "-", "-");
  }

  // atomicAdd: a dependent chain per thread, one block of 256, 1..32-way and full contention.
  progress("atomicAdd");
  {
    DeviceBuffer<unsigned> counters(kAtomicThreads), last(kAtomicThreads);
    const double glue = median_of_launches([&] {
      atomic_chain_kernel<false, false>
          <<<1, kAtomicThreads, 0, s>>>(counters.data(), 1, kAtomicIterations, cycles.data(), last.data());
      const auto c = fetch(cycles, s);
      for (unsigned v : fetch(last, s))
        if (v != 1u) data_check_failed("atomicAdd glue chain ended at " + std::to_string(v));
      double sum = 0;
      for (long long t : c) sum += static_cast<double>(t);
      return sum / kAtomicThreads / kAtomicIterations;
    });
    const unsigned per_thread = kAtomicWarm + kAtomicIterations;
    for (const bool shared : {true, false}) {
      for (const int ways : {1, 2, 4, 8, 16, 32, kAtomicThreads}) {
        double total = 0;
        const double per_op = median_of_launches([&] {
          CUDALAB_CUDA_CHECK(cudaMemsetAsync(counters.data(), 0, counters.bytes(), s));
          if (shared)
            atomic_chain_kernel<true, true>
                <<<1, kAtomicThreads, 0, s>>>(counters.data(), ways, kAtomicIterations, cycles.data(), last.data());
          else
            atomic_chain_kernel<false, true>
                <<<1, kAtomicThreads, 0, s>>>(counters.data(), ways, kAtomicIterations, cycles.data(), last.data());
          const auto c = fetch(cycles, s);
          const auto counts = fetch(counters, s);
          total = 0;
          for (int slot = 0; slot < kAtomicThreads; ++slot) {
            const unsigned want = slot < kAtomicThreads / ways ? static_cast<unsigned>(ways) * per_thread : 0u;
            if (counts[slot] != want)
              data_check_failed(std::string(shared ? kSharedAtomic : kGlobalAtomic) + " " + std::to_string(ways) +
                                "-way: slot " + std::to_string(slot) + " counted " + std::to_string(counts[slot]) +
                                ", expected " + std::to_string(want));
            total += counts[slot];
          }
          double sum = 0;
          for (long long t : c) sum += static_cast<double>(t);
          return sum / kAtomicThreads / kAtomicIterations;
        });
        const std::string setting = ways == 1                ? std::string(kUncontended)
                                    : ways == kAtomicThreads ? std::string(kFullContention)
                                                             : std::to_string(ways) + "-way (lanes per address)";
        cycles_row(shared ? kSharedAtomic : kGlobalAtomic, setting, per_op - glue, "clock64 (glue subtracted)", "ok",
                   total, static_cast<double>(kAtomicThreads) * per_thread);
      }
    }
  }

  // Warp votes against a shared-memory flag: one warp, a dependent chain.
  progress("warp votes");
  {
    DeviceBuffer<unsigned> out(32);
    const unsigned x0 = static_cast<unsigned>(context.seed) & 0xffffu;
    // Host replays: lane 0 alone (no vote), the ballot's mask of every lane's predicate, and `all`,
    // which no x can make true (one lane always sees (x + lane) % 32 == 0).
    unsigned lane0_chain = x0, ballot_chain = x0;
    for (int i = 0; i < kVoteIterations; ++i) {
      lane0_chain += 1u + ((lane0_chain & 31u) != 0 ? 1u : 0u);
      unsigned mask = 0;
      for (unsigned lane = 0; lane < 32; ++lane) mask |= (((ballot_chain + lane) & 31u) != 0 ? 1u : 0u) << lane;
      ballot_chain += 1u + mask;
    }
    const unsigned all_chain = x0 + static_cast<unsigned>(kVoteIterations);
    auto vote_cycles = [&](auto kernel, const char* name, unsigned want, bool uniform) {
      return median_of_launches([&] {
        kernel<<<1, 32, 0, s>>>(x0, kVoteIterations, cycles.data(), out.data());
        const double per_op = static_cast<double>(fetch(cycles, s)[0]) / kVoteIterations;
        const auto x = fetch(out, s);
        for (int lane = 0; lane < (uniform ? 32 : 1); ++lane)
          if (x[lane] != want)
            data_check_failed(std::string(name) + ": lane " + std::to_string(lane) + " ended at " +
                              std::to_string(x[lane]) + ", expected " + std::to_string(want));
        return per_op;
      });
    };
    const double glue = vote_cycles(vote_chain_kernel<kVoteNone>, "vote glue", lane0_chain, false);
    cycles_row("__ballot_sync", "one warp",
               vote_cycles(vote_chain_kernel<kVoteBallot>, "__ballot_sync", ballot_chain, true) - glue,
               "clock64 (glue subtracted)", "ok", "-", "-");
    cycles_row("__all_sync", "one warp", vote_cycles(vote_chain_kernel<kVoteAll>, "__all_sync", all_chain, true) - glue,
               "clock64 (glue subtracted)", "ok", "-", "-");
    cycles_row("shared-memory flag (all)", "one warp, 3 __syncwarp()",
               vote_cycles(vote_chain_kernel<kVoteSharedFlag>, "shared flag", all_chain, true) - glue,
               "clock64 (glue subtracted)", "ok", "-", "-");
  }

  // grid.sync() against a kernel boundary, at one block per SM and at every co-resident block.
  progress("grid.sync");
  {
    int device = 0, cooperative = 0, per_sm = 0;
    CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
    CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
    CUDALAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, reinterpret_cast<const void*>(grid_sync_kernel), kAtomicThreads, 0));
    int check_per_sm = 0;
    CUDALAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &check_per_sm, reinterpret_cast<const void*>(grid_sync_check_kernel), kAtomicThreads, 0));
    per_sm = std::min(per_sm, check_per_sm);
    DeviceBuffer<unsigned> arrivals(1), early(1);
    std::vector<int> shapes = {1};  // blocks per SM
    if (per_sm > 1) shapes.push_back(per_sm);
    for (const int blocks_per_sm : shapes) {
      const int blocks = blocks_per_sm * sms;
      const std::string setting =
          std::to_string(blocks_per_sm) + " block(s) of 256 per SM, " + std::to_string(blocks) + " blocks";
      if (cooperative == 0 || per_sm < 1) {
        rows.push_back({"grid.sync()", setting, "-", "-", "-",
                        cooperative == 0 ? "not run: the device does not support cooperative launch"
                                         : "not run: no block of 256 fits on an SM",
                        "-", "-"});
      } else {
        // The check: every sync sees every block's arrivals.
        CUDALAB_CUDA_CHECK(cudaMemsetAsync(arrivals.data(), 0, sizeof(unsigned), s));
        CUDALAB_CUDA_CHECK(cudaMemsetAsync(early.data(), 0, sizeof(unsigned), s));
        int check_iterations = kGridSyncCheckIterations;
        unsigned* arrivals_ptr = arrivals.data();
        unsigned* early_ptr = early.data();
        void* check_args[] = {&check_iterations, &arrivals_ptr, &early_ptr};
        CUDALAB_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(grid_sync_check_kernel),
                                                       dim3(blocks), dim3(kAtomicThreads), check_args, 0, s));
        const unsigned arrived = fetch(arrivals, s)[0], too_early = fetch(early, s)[0];
        if (too_early != 0 || arrived != static_cast<unsigned>(kGridSyncCheckIterations * blocks))
          data_check_failed("grid.sync: " + std::to_string(too_early) + " syncs passed early, " +
                            std::to_string(arrived) + " arrivals");
        int iterations = kGridSyncIterations;
        long long* cycles_ptr = cycles.data();
        void* args[] = {&iterations, &cycles_ptr};
        const double per_op = median_of_launches([&] {
          CUDALAB_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(grid_sync_kernel), dim3(blocks),
                                                         dim3(kAtomicThreads), args, 0, s));
          return static_cast<double>(fetch(cycles, s)[0]) / kGridSyncIterations;
        });
        cycles_row("grid.sync()", setting, per_op, "clock64 (block 0)", "ok: no block passed early", "-", "-");
      }
      // The alternative: end the kernel and launch the next (back-to-back empty launches).
      Event begin, end;
      std::vector<double> samples;
      for (int repeat = 0; repeat < kLaunchRepeats; ++repeat) {
        begin.record(s);
        for (int i = 0; i < kBoundaryLaunches; ++i) empty_kernel<<<blocks, kAtomicThreads, 0, s>>>();
        end.record(s);
        end.synchronize();
        CUDALAB_CUDA_CHECK(cudaGetLastError());
        if (repeat > 0) samples.push_back(end.elapsed_ms_since(begin) * 1e6 / kBoundaryLaunches);
      }
      ns_row("kernel boundary", setting, summarize(samples).median, "CUDA events over 1000 launches",
             "no result to check");
    }
  }

  // cudaDeviceSynchronize from the host: with nothing pending, and after an empty kernel.
  progress(kDeviceSync);
  {
    stream.synchronize();
    ns_row(kDeviceSync, kIdle, host_ns_per_call([] { CUDALAB_CUDA_CHECK(cudaDeviceSynchronize()); }, 1000),
           "host clock", "no result to check");
    ns_row(kDeviceSync, "after launching an empty kernel (the round trip)",
           host_ns_per_call(
               [&] {
                 empty_kernel<<<1, 32, 0, s>>>();
                 CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
               },
               200),
           "host clock", "no result to check");
  }

  // The unprotected counter (broken on purpose) beside atomicAdd.
  progress("shared counter");
  {
    DeviceBuffer<int> counts(sms);
    const double right = static_cast<double>(sms) * kAtomicThreads;
    auto count = [&](auto kernel) {
      CUDALAB_CUDA_CHECK(cudaMemsetAsync(counts.data(), 0, counts.bytes(), s));
      kernel<<<sms, kAtomicThreads, 0, s>>>(counts.data());
      double total = 0;
      for (int c : fetch(counts, s)) total += c;
      return total;
    };
    const double racy = count(unprotected_counter_kernel);
    const double atomic = count(atomic_counter_kernel);
    if (atomic != right)
      data_check_failed("atomicAdd counter: " + format_fixed(atomic, 0) + ", expected " + format_fixed(right, 0));
    const std::string setting = std::to_string(sms) + " blocks of 256, one increment per thread";
    rows.push_back({"counter++ on a shared int (broken on purpose)", setting, "-", "-", "-",
                    racy == right ? "right by luck (broken on purpose)" : "wrong (broken on purpose)", racy, right});
    rows.push_back({"atomicAdd on a shared int", setting, "-", "-", "-", "ok", atomic, right});
  }

  return {
      {"name", execution_ids::kSyncCosts},
      {"op", execution_ids::kPage},
      {"summary",
       "cycles per barrier, fence, atomicAdd (1- to 256-way contention), warp vote, grid.sync, kernel boundary and "
       "cudaDeviceSynchronize (claim C24)"},
      {"columns", {"operation", "setting", "cycles_per_op", "ns_per_op", "timed_by", "check", "got", "right"}},
      {"rows", rows},
      {"notes",
       {"clock64 rows: SM cycles over a loop of the operation (unrolled; the median of " +
            std::to_string(kLaunchRepeats - 1) + " launches after a warm-up), ns at the " +
            format_fixed(sm_ghz * 1e3, 0) + " MHz peak SM clock; host-timed rows: ns measured, cycles at that clock",
        "atomicAdd: one block of 256 threads, each a chain of " + std::to_string(kAtomicIterations) +
            " atomics whose operand depends on the last one's return (the latency one thread sees, with the "
            "other threads contending as the setting says); n-way: n lanes of a warp share an address; full: all "
            "256 threads one address; the mean over threads, less the chain's glue alone",
        "__threadfence 'after a global store': a volatile store then the fence, less the stores alone (what a "
        "fence costs when it must wait for a store); 'no pending stores': the fence alone",
        "votes: one warp, each vote's predicate depends on the last result; less the same chain with each lane's "
        "own predicate and no vote",
        "grid.sync(): cooperative launch (cudaLaunchCooperativeKernel), " + std::to_string(kGridSyncIterations) +
            " syncs timed in block 0; kernel boundary: back-to-back launches of an empty kernel with the same "
            "grid, CUDA events around 1000 of them",
        "a value below the loop without the operation is shown as 0",
        "counter++: the intermediate course's unprotected shared counter, broken on purpose: got is the count it "
        "reached, right the count of increments; atomicAdd's count beside it is checked"}}};
}

const nlohmann::json* find_row(const nlohmann::json& table, const std::string& operation, const std::string& setting) {
  for (const auto& row : table["rows"])
    if (row[0] == operation && row[1] == setting) return &row;
  return nullptr;
}

// C24: one range part per stated cost. __syncthreads "~10" is 5-20 cycles (block of 256);
// atomicAdd 20-600 cycles is judged three times: global uncontended, and global and shared with
// all 256 threads on one address; cudaDeviceSynchronize 1-10 us on an idle device; a fence 200-400
// cycles after a store it must wait for.
nlohmann::json claim_c24(const nlohmann::json& results) {
  const auto* table = experiment(results, execution_ids::kSyncCosts);
  if (table == nullptr) return nullptr;
  const auto* barrier = find_row(*table, kSyncthreads, "block of 256");
  const auto* barrier_1024 = find_row(*table, kSyncthreads, "block of 1024");
  const auto* global_free = find_row(*table, kGlobalAtomic, kUncontended);
  const auto* global_full = find_row(*table, kGlobalAtomic, kFullContention);
  const auto* shared_free = find_row(*table, kSharedAtomic, kUncontended);
  const auto* shared_full = find_row(*table, kSharedAtomic, kFullContention);
  const auto* device_sync = find_row(*table, kDeviceSync, kIdle);
  const auto* fence = find_row(*table, kFence, kFenceAfterStore);
  for (const auto* row : {barrier, global_free, global_full, shared_full, device_sync, fence})
    if (row == nullptr || !(*row)[2].is_number()) return nullptr;
  auto cycles = [](const nlohmann::json* row) { return std::max(0.0, (*row)[2].get<double>()); };
  const double sync_us = (*device_sync)[3].get<double>() / 1e3;
  std::string measured = "__syncthreads " + format_fixed(cycles(barrier), 1) + " cycles (256 threads)";
  if (barrier_1024 != nullptr && (*barrier_1024)[2].is_number())
    measured += ", " + format_fixed(cycles(barrier_1024), 1) + " (1024)";
  measured += "; atomicAdd global " + format_fixed(cycles(global_free), 0) + " uncontended, " +
              format_fixed(cycles(global_full), 0) + " with 256 threads on one address";
  if (shared_free != nullptr && (*shared_free)[2].is_number())
    measured += "; shared " + format_fixed(cycles(shared_free), 0) + " uncontended";
  measured += ", " + format_fixed(cycles(shared_full), 0) + " on one address; cudaDeviceSynchronize (idle) " +
              format_fixed(sync_us, 2) + " us; __threadfence after a store " + format_fixed(cycles(fence), 0) +
              " cycles";
  return claim_verdict(
      "C24",
      "__syncthreads 5-20 cycles (~10), atomicAdd 20-600 cycles, cudaDeviceSynchronize 1-10 us, fence 200-400 cycles",
      measured,
      {judge_range("__syncthreads ~10 cycles (block of 256)", 5, 20, cycles(barrier)),
       judge_range("atomicAdd 20-600 cycles: global, uncontended", 20, 600, cycles(global_free)),
       judge_range("atomicAdd 20-600 cycles: global, 256 threads on one address", 20, 600, cycles(global_full)),
       judge_range("atomicAdd 20-600 cycles: shared, 256 threads on one address", 20, 600, cycles(shared_full)),
       judge_range("cudaDeviceSynchronize 1-10 us (idle device)", 1, 10, sync_us),
       judge_range("fence 200-400 cycles (after a global store)", 200, 400, cycles(fence))});
}

}  // namespace

void register_sync_costs(Registry& registry) {
  registry.add(Experiment{
      execution_ids::kSyncCosts, execution_ids::kPage,
      "cost of __syncthreads, __threadfence, atomicAdd under contention, warp votes, grid.sync, a kernel boundary and "
      "cudaDeviceSynchronize (claim C24)",
      run_sync_costs,
      bar_plot("Cost per operation (SM cycles)", nlohmann::json::array({"operation", "setting"}), "cycles_per_op",
               "SM cycles per operation")});
  registry.add(ClaimCheck{"C24", execution_ids::kPage, {}, claim_c24});
}

}  // namespace cudalab::harness::execution_experiments
