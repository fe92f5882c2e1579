// Instruction throughput (claim C25): every thread of a full grid advances kChains independent
// chains x = step(x), so the scheduler always has independent work and the kernel's time counts
// how many steps the SMs retire per cycle, not the latency of one. The steps: int32 division and
// modulo by a divisor known only at run time (not a power of two, and a power of two), by a
// compile-time constant (which the compiler turns into a multiply and a shift), by a divisor that
// changes every step, and the shift and mask that replace them for powers of two; expf against
// __expf, sqrtf against rsqrtf, and fp32 against fp64 FMA. Each result is checked on the host.
#include <cmath>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
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
constexpr int kBlocksPerSm = 4;  // 32 warps per SM, each with kChains independent chains: 64 steps in flight per
                                 // scheduler, more than any pipe's latency needs
constexpr int kChains = 8;
constexpr int kIterations = 16384;  // steps per chain: the slowest case runs tens of ms, the fastest ~0.5 ms

// What the steps read, all kernel arguments, so no divisor, shift or mask is known at compile time.
struct Operands {
  int divisor = 7;  // 7 (not a power of two) or 8 (a power of two the compiler cannot see)
  int shift = 3;    // log2(8)
  int mask = 7;     // 8 - 1
  int addend = 1 << 20;
  int numerator = 1 << 30;  // the chains that divide by their own value: x = numerator / x + addend
  unsigned multiplier = 2654435761u;
  int start = 1;  // integer chains start at start + 7919 * chain + 131 * lane
  float a = 0.5f, b = 0.75f;
  double da = 0.5, db = 0.75;
};

__host__ __device__ inline int int_start(const Operands& o, int lane, int chain) {
  return o.start + 7919 * chain + 131 * lane;
}
__host__ __device__ inline float float_start(int lane, int chain) {
  return 1.0f + 0.125f * static_cast<float>(chain) + static_cast<float>(lane) / 64.0f;
}

// Each integer step adds a constant after its operation, so the chain never collapses to 0 (a
// quotient chained on itself would): the shift and mask steps are two instructions, and every
// integer row pays the same add. x stays positive, where >> and & equal / and % by 8.
struct DivRuntime {
  using Value = int;
  static constexpr bool kExact = true;
  __host__ __device__ static int step(int x, const Operands& o) { return x / o.divisor + o.addend; }
};
struct DivVarying {  // a new divisor every step: nothing about the division can be computed once
  using Value = int;
  static constexpr bool kExact = true;
  __host__ __device__ static int step(int x, const Operands& o) { return o.numerator / x + o.addend; }
};
struct DivConstant {
  using Value = int;
  static constexpr bool kExact = true;
  __host__ __device__ static int step(int x, const Operands& o) { return x / 7 + o.addend; }
};
struct Shift {
  using Value = int;
  static constexpr bool kExact = true;
  __host__ __device__ static int step(int x, const Operands& o) { return (x >> o.shift) + o.addend; }
};
struct ModRuntime {
  using Value = int;
  static constexpr bool kExact = true;
  __host__ __device__ static int step(int x, const Operands& o) { return x % o.divisor + o.addend; }
};
struct ModVarying {
  using Value = int;
  static constexpr bool kExact = true;
  __host__ __device__ static int step(int x, const Operands& o) { return o.numerator % x + o.addend; }
};
struct ModConstant {
  using Value = int;
  static constexpr bool kExact = true;
  __host__ __device__ static int step(int x, const Operands& o) { return x % 7 + o.addend; }
};
struct Mask {
  using Value = int;
  static constexpr bool kExact = true;
  __host__ __device__ static int step(int x, const Operands& o) { return (x & o.mask) + o.addend; }
};
struct IntMultiplyAdd {  // the integer pipe's reference: one IMAD (unsigned, so wrapping is defined)
  using Value = int;
  static constexpr bool kExact = true;
  __host__ __device__ static int step(int x, const Operands& o) {
    return static_cast<int>(static_cast<unsigned>(x) * o.multiplier + static_cast<unsigned>(o.addend));
  }
};

// The transcendental steps converge to a fixed point (e^-x to the omega constant, sqrt and rsqrt
// to 1): the host checks each chain landed there, since the device's expf and rsqrtf are not the
// host's to the last bit. A chain that never ran would still hold its start value, 1.0 to 2.4.
constexpr double kOmega = 0.567143290409783873;  // x = e^-x
struct ExpAccurate {
  using Value = float;
  static constexpr bool kExact = false;
  static constexpr double kFixedPoint = kOmega;
  __device__ static float step(float x, const Operands&) { return expf(-x); }
};
struct ExpIntrinsic {
  using Value = float;
  static constexpr bool kExact = false;
  static constexpr double kFixedPoint = kOmega;
  __device__ static float step(float x, const Operands&) { return __expf(-x); }
};
struct Sqrt {
  using Value = float;
  static constexpr bool kExact = false;
  static constexpr double kFixedPoint = 1.0;
  __device__ static float step(float x, const Operands&) { return sqrtf(x); }
};
struct Rsqrt {
  using Value = float;
  static constexpr bool kExact = false;
  static constexpr double kFixedPoint = 1.0;
  __device__ static float step(float x, const Operands&) { return rsqrtf(x); }
};
struct Fma32 {
  using Value = float;
  static constexpr bool kExact = true;  // a correctly rounded FMA on both sides
  __host__ __device__ static float step(float x, const Operands& o) { return fmaf(x, o.a, o.b); }
};
struct Fma64 {
  using Value = double;
  static constexpr bool kExact = true;
  __host__ __device__ static double step(double x, const Operands& o) { return fma(x, o.da, o.db); }
};

__host__ __device__ inline int start_value(int, const Operands& o, int lane, int chain) {
  return int_start(o, lane, chain);
}
__host__ __device__ inline float start_value(float, const Operands&, int lane, int chain) {
  return float_start(lane, chain);
}
__host__ __device__ inline double start_value(double, const Operands&, int lane, int chain) {
  return float_start(lane, chain);
}

// A thread's chains folded into one value (wrapping for integers), in a fixed order the host
// repeats.
__host__ __device__ inline int combine(int a, int b) {
  return static_cast<int>(static_cast<unsigned>(a) + static_cast<unsigned>(b));
}
__host__ __device__ inline float combine(float a, float b) { return a + b; }
__host__ __device__ inline double combine(double a, double b) { return a + b; }

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Thread 0's SM cycles and nanoseconds over its loop: the clock the SMs actually ran at.
struct ClockSample {
  long long cycles;
  unsigned long long ns;
};
static_assert(sizeof(ClockSample) == 2 * sizeof(std::uint64_t), "ClockSample must have no padding");

template <typename Op>
__global__ void __launch_bounds__(kBlock, kBlocksPerSm)
    instruction_cost_kernel(Operands o, int iterations, typename Op::Value* out, ClockSample* clock) {
  using Value = typename Op::Value;
  const int lane = static_cast<int>(threadIdx.x % 32);
  Value x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = start_value(Value{}, o, lane, c);
  const long long c0 = clock64();
  const unsigned long long t0 = global_ns();
  // Unrolled so the loop's own counter, compare and branch take a few percent of the issue slots
  // even where the step is a single instruction.
#pragma unroll 8
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = Op::step(x[c], o);
  }
  const unsigned long long t1 = global_ns();
  const long long c1 = clock64();
  Value sum = x[0];
#pragma unroll
  for (int c = 1; c < kChains; ++c) sum = combine(sum, x[c]);
  out[global_thread_index()] = sum;
  if (blockIdx.x == 0 && threadIdx.x == 0) *clock = {c1 - c0, t1 - t0};
}

[[noreturn]] void wrong_data(const std::string& what) {
  throw Error(ErrorKind::cuda, std::string(execution_ids::kInstructionCosts) + ": wrong data: " + what, __FILE__,
              __LINE__);
}

// The value lane `lane`'s threads must write, for the steps the host can repeat exactly.
template <typename Op>
typename Op::Value expected_sum(const Operands& o, int lane, int iterations) {
  using Value = typename Op::Value;
  Value sum{};
  for (int c = 0; c < kChains; ++c) {
    Value x = start_value(Value{}, o, lane, c);
    for (int i = 0; i < iterations; ++i) x = Op::step(x, o);
    sum = c == 0 ? x : combine(sum, x);
  }
  return sum;
}

struct Measurement {
  double median_ms = 0;
  double sm_mhz = 0;  // thread 0's cycles over its nanoseconds, in the last timed launch
};

struct Setup {
  int blocks;
  std::int64_t threads;
  Stream& stream;
  KernelTimer& timer;
  const TimingOptions& timing;
};

template <typename Op>
Measurement measure(const std::string& name, const Operands& o, const Setup& setup) {
  using Value = typename Op::Value;
  DeviceBuffer<Value> out(setup.threads);
  DeviceBuffer<ClockSample> clock(1);
  const cudaStream_t s = setup.stream.get();
  auto launch = [&](cudaStream_t stream) {
    instruction_cost_kernel<Op><<<setup.blocks, kBlock, 0, stream>>>(o, kIterations, out.data(), clock.data());
  };
  poison(out.data(), out.bytes(), s, std::is_integral_v<Value> ? kIntegerPoisonByte : kFloatPoisonByte);
  launch(s);
  CUDALAB_CUDA_CHECK(cudaGetLastError());
  std::vector<Value> host(static_cast<std::size_t>(setup.threads));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), out.data(), out.bytes(), cudaMemcpyDeviceToHost, s));
  setup.stream.synchronize();
  if constexpr (Op::kExact) {
    std::vector<Value> expected(32);
    for (int lane = 0; lane < 32; ++lane) expected[lane] = expected_sum<Op>(o, lane, kIterations);
    for (std::int64_t t = 0; t < setup.threads; ++t)
      if (host[t] != expected[t % 32])
        wrong_data(name + ": thread " + std::to_string(t) + " got " + format_general(static_cast<double>(host[t])) +
                   ", expected " + format_general(static_cast<double>(expected[t % 32])));
  } else {
    // Each chain within 1e-4 of the fixed point, so their sum within 1e-4 of kChains times it.
    const double target = kChains * Op::kFixedPoint;
    for (std::int64_t t = 0; t < setup.threads; ++t)
      if (!(std::abs(static_cast<double>(host[t]) - target) <= 1e-4 * target))
        wrong_data(name + ": thread " + std::to_string(t) + " got " + format_general(static_cast<double>(host[t])) +
                   ", expected " + format_general(target) + " (the fixed point, " + std::to_string(kChains) +
                   " chains)");
  }
  const Summary t = setup.timer.time(launch, s, setup.timing);
  ClockSample sample{};
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(&sample, clock.data(), sizeof sample, cudaMemcpyDeviceToHost, s));
  setup.stream.synchronize();
  Measurement m;
  m.median_ms = t.median;
  m.sm_mhz = sample.ns > 0 ? static_cast<double>(sample.cycles) / static_cast<double>(sample.ns) * 1e3 : 0;
  return m;
}

struct CostCase {
  std::string op;
  std::string kind;  // "integer" or "float"
  std::function<Measurement(const std::string&, const Setup&)> measure;
};

// The row labels the claim reads.
constexpr char kDivPow2[] = "x / d, d = 8 at run time (same every step)";
constexpr char kDivVarying[] = "K / x (a new divisor every step)";
constexpr char kDivConstant[] = "x / 7 (compile-time constant)";
constexpr char kShift[] = "x >> s, s = 3 at run time";
constexpr char kModPow2[] = "x % d, d = 8 at run time (same every step)";
constexpr char kModVarying[] = "K % x (a new divisor every step)";
constexpr char kModConstant[] = "x % 7 (compile-time constant)";
constexpr char kMask[] = "x & m, m = 7 at run time";
constexpr char kFma32[] = "fmaf(x, a, b) fp32";

std::vector<CostCase> cost_cases(std::uint64_t seed) {
  Operands seven;
  seven.start = 1 + static_cast<int>(seed % 1000);
  seven.divisor = 7;
  Operands eight = seven;
  eight.divisor = 8;
  auto with = [](auto op_tag, Operands o) {
    using Op = decltype(op_tag);
    return [o](const std::string& name, const Setup& setup) { return measure<Op>(name, o, setup); };
  };
  return {
      {"x / d, d = 7 at run time (same every step)", "integer", with(DivRuntime{}, seven)},
      {kDivPow2, "integer", with(DivRuntime{}, eight)},
      {kDivVarying, "integer", with(DivVarying{}, seven)},
      {kDivConstant, "integer", with(DivConstant{}, seven)},
      {kShift, "integer", with(Shift{}, eight)},
      {"x % d, d = 7 at run time (same every step)", "integer", with(ModRuntime{}, seven)},
      {kModPow2, "integer", with(ModRuntime{}, eight)},
      {kModVarying, "integer", with(ModVarying{}, seven)},
      {kModConstant, "integer", with(ModConstant{}, seven)},
      {kMask, "integer", with(Mask{}, eight)},
      {"x * a + b int32 (IMAD)", "integer", with(IntMultiplyAdd{}, seven)},
      {"expf(-x)", "float", with(ExpAccurate{}, seven)},
      {"__expf(-x)", "float", with(ExpIntrinsic{}, seven)},
      {"sqrtf(x)", "float", with(Sqrt{}, seven)},
      {"rsqrtf(x)", "float", with(Rsqrt{}, seven)},
      {kFma32, "float", with(Fma32{}, seven)},
      {"fma(x, a, b) fp64", "float", with(Fma64{}, seven)},
  };
}

constexpr int kColumnMedianMs = 2;

nlohmann::json run_instruction_costs(const ExperimentContext& context) {
  const int blocks = context.device.sm_count * kBlocksPerSm;
  const std::int64_t threads = static_cast<std::int64_t>(blocks) * kBlock;
  const double ops = static_cast<double>(threads) * kChains * kIterations;
  Stream stream;
  KernelTimer timer;
  const TimingOptions timing = sweep_timing(/*cold=*/false);  // registers only: one store per thread
  const Setup setup{blocks, threads, stream, timer, timing};
  nlohmann::json rows = nlohmann::json::array();
  double fma_ops_per_clock = 0;
  std::vector<std::pair<const CostCase*, Measurement>> measured;
  const std::vector<CostCase> cases = cost_cases(context.seed);
  for (const CostCase& c : cases) {
    if (context.progress) context.progress(std::string(execution_ids::kInstructionCosts) + " " + c.op);
    measured.emplace_back(&c, c.measure(c.op, setup));
  }
  auto ops_per_clock = [&](const Measurement& m) {
    const double mhz = m.sm_mhz > 0 ? m.sm_mhz : context.device.sm_clock_khz * 1e-3;
    return ops / (m.median_ms * 1e-3) / (mhz * 1e6) / context.device.sm_count;
  };
  for (const auto& [c, m] : measured)
    if (c->op == kFma32) fma_ops_per_clock = ops_per_clock(m);
  for (const auto& [c, m] : measured) {
    const double per_clock = ops_per_clock(m);
    const double gops = ops / (m.median_ms * 1e-3) / 1e9;
    rows.push_back({c->op, c->kind, m.median_ms, gops, 1.0 / (gops / context.device.sm_count), per_clock, m.sm_mhz,
                    fma_ops_per_clock / per_clock});
  }
  return {{"name", execution_ids::kInstructionCosts},
          {"op", execution_ids::kPage},
          {"summary",
           "throughput of int32 division and modulo (run-time, constant and changing divisors) against shift "
           "and mask, expf / __expf, sqrtf / rsqrtf, fp32 / fp64 FMA (claim C25)"},
          {"columns",
           {"op", "kind", "median_ms", "gops_per_s", "ns_per_op_per_sm", "ops_per_clock_per_sm", "sm_mhz_measured",
            "cost_vs_fp32_fma"}},
          {"rows", rows},
          {"notes",
           {"every thread of " + std::to_string(kBlocksPerSm) + " blocks of " + std::to_string(kBlock) +
                " threads per SM advances " + std::to_string(kChains) + " independent chains x = step(x) by " +
                std::to_string(kIterations) + " steps: " + format_significant(ops, 4) + " steps per row",
            "each integer step is the operation plus the add of a constant (so the chain never collapses to 0): "
            "the shift and mask rows are two instructions per step, and every integer row pays the same add",
            "d, s and m are kernel arguments: the compiler cannot see that d = 8 is a power of two; where the "
            "divisor is the same every step it may compute the divisor's reciprocal once, outside the loop, "
            "which a divisor that changes every step (K / x, K % x) rules out",
            "x / 7 and x % 7: a compile-time divisor, which the compiler replaces by a multiply-high and a shift",
            "ops_per_clock_per_sm at sm_mhz_measured: thread 0's clock64() cycles over its %globaltimer "
            "nanoseconds (peak " +
                format_fixed(context.device.sm_clock_khz * 1e-3, 0) +
                " MHz); an SM's FP32 pipes retire 128 FMAs per cycle at most",
            "cost_vs_fp32_fma: the fp32 FMA's steps per cycle over the row's",
            "integer and FMA rows: every thread's sum of its chains compared exactly with the host's; expf, "
            "__expf, sqrtf, rsqrtf: every chain's convergence to the step's fixed point (e^-x: 0.5671; sqrt and "
            "rsqrt: 1) checked to 1e-4"}}};
}

const nlohmann::json* cost_row(const nlohmann::json& table, const std::string& op) {
  for (const auto& row : table["rows"])
    if (row[0] == op) return &row;
  return nullptr;
}

// How many times the time of `slow`'s steps the row `slow` took over the row `fast` (the same
// number of steps on the same grid).
double time_ratio(const nlohmann::json* slow, const nlohmann::json* fast) {
  return (*slow)[kColumnMedianMs].get<double>() / (*fast)[kColumnMedianMs].get<double>();
}

// C25: integer division and modulo are expensive; for powers of two, shifts and masks replace
// them. "Expensive" is read as at least 4x the replacement: the cost of a quarter-rate
// instruction against a full-rate one, the smallest gap that makes the tutorials' advice worth a
// rewrite. Four parts, division and modulo each by a power of two known only at run time (the
// divisor the same every step, so the compiler may hoist its reciprocal) and by a divisor that
// changes every step (the whole sequence each time), each against the shift or mask step. The
// compile-time divisor, for which the compiler emits its own multiply and shift, is reported.
nlohmann::json claim_c25(const nlohmann::json& results) {
  const auto* table = experiment(results, execution_ids::kInstructionCosts);
  if (table == nullptr) return nullptr;
  const auto* div_pow2 = cost_row(*table, kDivPow2);
  const auto* div_varying = cost_row(*table, kDivVarying);
  const auto* div_constant = cost_row(*table, kDivConstant);
  const auto* shift = cost_row(*table, kShift);
  const auto* mod_pow2 = cost_row(*table, kModPow2);
  const auto* mod_varying = cost_row(*table, kModVarying);
  const auto* mod_constant = cost_row(*table, kModConstant);
  const auto* mask = cost_row(*table, kMask);
  for (const auto* row : {div_pow2, div_varying, div_constant, shift, mod_pow2, mod_varying, mod_constant, mask})
    if (row == nullptr) return nullptr;
  auto x = [](double ratio) { return format_fixed(ratio, 1) + "x"; };
  return claim_verdict(
      "C25", "division and modulo at least 4x the cost of the shift and mask that replace them for powers of two",
      "division by a run-time 8: " + x(time_ratio(div_pow2, shift)) +
          " a shift, by a new divisor every step: " + x(time_ratio(div_varying, shift)) +
          "; modulo: " + x(time_ratio(mod_pow2, mask)) + " and " + x(time_ratio(mod_varying, mask)) +
          " a mask; by a compile-time 7 (the compiler's multiply and shift): " + x(time_ratio(div_constant, shift)) +
          " and " + x(time_ratio(mod_constant, mask)) + " (throughput per step, whole grid)",
      {judge_ratio("division by a run-time power of two (same every step) >= 4x a shift", 4.0,
                   time_ratio(div_pow2, shift)),
       judge_ratio("division by a new divisor every step >= 4x a shift", 4.0, time_ratio(div_varying, shift)),
       judge_ratio("modulo by a run-time power of two (same every step) >= 4x a mask", 4.0, time_ratio(mod_pow2, mask)),
       judge_ratio("modulo by a new divisor every step >= 4x a mask", 4.0, time_ratio(mod_varying, mask))});
}

}  // namespace

void register_instruction_costs(Registry& registry) {
  registry.add(Experiment{execution_ids::kInstructionCosts, execution_ids::kPage,
                          "instruction throughput: int32 division and modulo against shift and mask, expf, sqrtf, "
                          "fp32 and fp64 FMA (claim C25)",
                          run_instruction_costs,
                          bar_plot("Instruction costs: throughput cost per step, in fp32 FMAs", "op",
                                   "cost_vs_fp32_fma", "cost per step / cost of an fp32 FMA (whole grid)")});
  registry.add(ClaimCheck{"C25", execution_ids::kPage, {}, claim_c25});
}

}  // namespace cudalab::harness::execution_experiments
