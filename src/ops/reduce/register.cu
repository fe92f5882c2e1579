// Registry entries for sum reduction: the workload (input, a scratch copy for the in-place
// variants, poisoned output, a double-precision CPU reference), the ladder for fp32 and int32,
// CUB, and the claims these numbers answer (C16-C20).
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/reduce/variants.hpp"

namespace cudalab::harness {
namespace {

namespace rv = reduce_variants;

template <typename T>
constexpr unsigned char poison_byte() {
  return std::is_floating_point_v<T> ? kFloatPoisonByte : kIntegerPoisonByte;
}

// T: the input type; Out: the result's (T, or double for fp32 inputs summed in double).
template <typename T, typename Out = T>
class ReduceWorkload final : public Workload {
 public:
  explicit ReduceWorkload(std::int64_t n)
      : n_(n),
        input_(n),
        scratch_copy_(std::is_same_v<T, Out> ? n : 0),
        out_(1),
        workspace_(
            static_cast<std::int64_t>(std::is_same_v<T, Out> ? rv::workspace_bytes<T>(n) : rv::workspace_bytes_f64(n))),
        host_input_(new T[static_cast<std::size_t>(n > 0 ? n : 1)]) {
    CUDALAB_CUDA_CHECK(cudaMemset(workspace_.data(), 0, workspace_.bytes()));  // the ticket counter starts at 0
  }

  void generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream) override {
    distribution_ = distribution;
    fill_random(input_.data(), n_, seed, distribution, stream);
    if (n_ > 0)
      CUDALAB_CUDA_CHECK(
          cudaMemcpyAsync(host_input_.get(), input_.data(), input_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  void poison(cudaStream_t stream) override { harness::poison(out_.data(), out_.bytes(), stream, poison_byte<Out>()); }

  Comparison check(cudaStream_t stream) override {
    Out result;
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(&result, out_.data(), sizeof(Out), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto [reference, tolerance] = reference_sum();
    return compare_values(
        &result, 1, tolerance, [reference = reference](std::int64_t) { return reference; }, poison_byte<Out>());
  }

  void launch(void (*launcher)(const T*, std::int64_t, Out*, void*, cudaStream_t), cudaStream_t stream) {
    launcher(input_.data(), n_, out_.data(), workspace_.data(), stream);
  }
  void launch_in_place(void (*launcher)(T*, std::int64_t, T*, void*, cudaStream_t), cudaStream_t stream) {
    launcher(scratch_copy_.data(), n_, out_.data(), workspace_.data(), stream);
  }
  // In-place variants destroy their input: each run starts from a fresh copy (not timed).
  void restore_scratch_copy(cudaStream_t stream) {
    if (n_ > 0)
      CUDALAB_CUDA_CHECK(
          cudaMemcpyAsync(scratch_copy_.data(), input_.data(), input_.bytes(), cudaMemcpyDeviceToDevice, stream));
  }

 private:
  // fp32: the sum in double and a tolerance of 2 ceil(log2 n) eps sum|x| (tree-order rounding),
  // except on whole-number inputs in [-16, 16]: then every partial sum of any summation order
  // stays an integer far below 2^24 (a random walk of such steps reaches ~10 sqrt(n), about 1.6e5
  // at n = 2^28), so every correct order is exact and the check is exact. That is what catches
  // a race whose error hides inside the rounding tolerance of random real inputs.
  // int32: the wrap-around sum, exactly (unsigned arithmetic is associative modulo 2^32).
  std::pair<double, Tolerance> reference_sum() const {
    const T* x = host_input_.get();
    if constexpr (std::is_floating_point_v<T>) {
      std::vector<double> sums(64, 0.0), magnitudes(64, 0.0);
      parallel_chunks(n_, [&](int w, std::int64_t begin, std::int64_t end) {
        double sum = 0, magnitude = 0;
        for (std::int64_t i = begin; i < end; ++i) {
          sum += x[i];
          magnitude += std::fabs(static_cast<double>(x[i]));
        }
        sums[w] = sum;
        magnitudes[w] = magnitude;
      });
      double sum = 0, magnitude = 0;
      for (int w = 0; w < 64; ++w) {
        sum += sums[w];
        magnitude += magnitudes[w];
      }
      if (distribution_ == Distribution::integers) return {sum, Tolerance::exact()};
      return {sum,
              std::is_same_v<Out, double> ? Tolerance::fp64_sum(n_, magnitude) : Tolerance::fp32_sum(n_, magnitude)};
    } else {
      std::vector<std::uint32_t> sums(64, 0u);
      parallel_chunks(n_, [&](int w, std::int64_t begin, std::int64_t end) {
        std::uint32_t sum = 0;
        for (std::int64_t i = begin; i < end; ++i) sum += static_cast<std::uint32_t>(x[i]);
        sums[w] = sum;
      });
      std::uint32_t sum = 0;
      for (std::uint32_t s : sums) sum += s;
      return {static_cast<double>(static_cast<std::int32_t>(sum)), Tolerance::exact()};
    }
  }

  std::int64_t n_;
  Distribution distribution_ = Distribution::uniform;
  DeviceBuffer<T> input_, scratch_copy_;
  DeviceBuffer<Out> out_;
  DeviceBuffer<unsigned char> workspace_;
  std::unique_ptr<T[]> host_input_;
};

template <typename T, typename Out = T>
Variant reading(std::string id, std::string technique, Role role,
                void (*launcher)(const T*, std::int64_t, Out*, void*, cudaStream_t)) {
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.role = role;
  v.launch = [launcher](Workload& w, cudaStream_t s) { static_cast<ReduceWorkload<T, Out>&>(w).launch(launcher, s); };
  return v;
}

template <typename T>
Variant in_place(std::string id, std::string technique, void (*launcher)(T*, std::int64_t, T*, void*, cudaStream_t)) {
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.launch = [launcher](Workload& w, cudaStream_t s) {
    static_cast<ReduceWorkload<T>&>(w).launch_in_place(launcher, s);
  };
  v.prepare = [](Workload& w, cudaStream_t s) { static_cast<ReduceWorkload<T>&>(w).restore_scratch_copy(s); };
  return v;
}

template <typename T, typename Out = T>
Op reduce_op(const std::string& name, const std::string& summary, std::vector<Variant> variants) {
  Op op;
  op.name = name;
  op.summary = summary;
  // 2^10: the seed's ladder size (claim C18); 2^28: the issue's comparison size.
  op.bench_problems = {{1 << 10}, {1 << 20}, {1 << 28}};
  op.test_problems = {{0}, {1}, {31}, {32}, {33}, {1000003}, {1 << 24}, {1 << 28}};
  // Whole-number inputs: the check is exact for fp32 too (see ReduceWorkload::reference_sum).
  op.bench_distributions = {Distribution::integers};
  op.work = [](const Problem& p) {
    Work w;
    w.bytes_read = static_cast<double>(sizeof(T)) * static_cast<double>(p.n);
    w.bytes_written = sizeof(Out);
    w.flops = static_cast<double>(p.n);
    return w;
  };
  op.device_bytes = [](const Problem& p) {
    return 2 * static_cast<std::size_t>(p.n) * sizeof(T) + (static_cast<std::size_t>(p.n) / 64 + (64u << 10));
  };
  op.host_bytes = [](const Problem& p) { return static_cast<std::size_t>(p.n) * sizeof(T); };
  op.make_workload = [](const Problem& p) { return std::make_unique<ReduceWorkload<T, Out>>(p.n); };
  op.variants = std::move(variants);
  return op;
}

template <typename T>
std::vector<Variant> ladder() {
  return {
      in_place<T>("global_modulo", "seed 002: in place in global memory, filter tid % (2*stride) == 0",
                  rv::global_modulo<T>),
      in_place<T>("global_mask", "seed 002 fixed: the same filter as a mask, (tid & (2*stride-1)) == 0",
                  rv::global_mask<T>),
      reading<T>("no_filter_racy", "seed 002's filter removed: neighbours' reads and writes race (BROKEN)",
                 Role::broken, rv::shared_no_filter<T>),
      reading<T>("interleaved_divergent", "seed 000 step 1: shared tile, tid % (2*s) == 0, divergent warps",
                 Role::ladder, rv::interleaved_divergent<T>),
      reading<T>("interleaved_strided", "step 2: strided index 2*s*tid, no divergence, bank conflicts", Role::ladder,
                 rv::interleaved_strided<T>),
      reading<T>("sequential", "step 3: sequential addressing tid < s, conflict-free", Role::ladder, rv::sequential<T>),
      reading<T>("first_add_on_load", "step 4: two elements added during the load, half the blocks", Role::ladder,
                 rv::first_add_on_load<T>),
      reading<T>("unrolled_last_warp", "step 5: last warp by register shuffles", Role::ladder,
                 rv::unrolled_last_warp<T>),
      reading<T>("complete_unroll", "step 6: whole tree unrolled at compile time", Role::ladder,
                 rv::complete_unroll<T>),
      reading<T>("multiple_per_thread", "step 7: resident grid, grid-stride sum per thread, then one tree",
                 Role::ladder, rv::multiple_per_thread<T>),
      reading<T>("shuffle_atomic", "16-byte loads, warp shuffles, one atomicAdd per block", Role::ladder,
                 rv::shuffle_atomic<T>),
      reading<T>("single_pass", "16-byte loads, 4 accumulators, last block adds the partials: one launch", Role::ladder,
                 rv::single_pass<T>),
      reading<T>("tile_atomic", "one 2048-element tile per block, no loop: blocks stream through memory in order",
                 Role::ladder, rv::tile_atomic<T>),
      reading<T>("tile_deterministic",
                 "8192-element tiles; the last block of each 256, then of all, adds partials: one launch", Role::ladder,
                 rv::tile_deterministic<T>),
      reading<T>("cub", "cub::DeviceReduce::Sum, the library baseline", Role::baseline, rv::cub_sum<T>),
  };
}

constexpr const char* kOp = "reduce_sum_f32";
constexpr const char* kInputs = "integers";  // the distribution bench times reductions on

std::string ms(const nlohmann::json& record) { return format_fixed(median_ms(record), 4) + " ms"; }

// C16: removing the `%` filter cut 283 us to 176 us (1.61x) because `%` is slow. The filter cannot
// simply be removed (C17); cudalab times the modulo filter against the same filter as a mask.
nlohmann::json claim_c16(const nlohmann::json& results) {
  const std::int64_t n = largest_timed_n(results, kOp, kInputs);
  const auto* modulo = timed_record(results, kOp, "global_modulo", n, kInputs);
  const auto* mask = timed_record(results, kOp, "global_mask", n, kInputs);
  if (modulo == nullptr || mask == nullptr) return nullptr;
  const double ratio = median_ms(*modulo) / median_ms(*mask);
  return verdict("C16",
                 "Removing the tid % (2*stride) filter cuts the reduction's time 283 -> 176 us, because % is slow",
                 "seed 002", "1.61x from dropping the modulo",
                 "global_modulo " + ms(*modulo) + ", global_mask " + ms(*mask) + " at n=" + std::to_string(n) +
                     " (the modulo replaced by a mask; removing the filter is wrong, C17)",
                 ratio, speedup_verdict(ratio, 283.0 / 176.0));
}

// C17: the filter-free version is a race: wrong without -G.
nlohmann::json claim_c17(const nlohmann::json& results) {
  int failed = 0, checked = 0;
  for (const auto& r : results.value("records", nlohmann::json::array())) {
    if (r.value("op", "").rfind("reduce_sum", 0) != 0 || r.value("variant", "") != "no_filter_racy") continue;
    if (r.value("outcome", "") == "skipped") continue;
    ++checked;
    failed += r.value("outcome", "") == "failed";
  }
  if (checked == 0) return nullptr;
  return verdict(
      "C17", "The filter-free in-place reduction is a race: wrong without -G, right by luck with -G", "seed 002",
      "wrong results from optimised code",
      std::to_string(failed) + " of " + std::to_string(checked) + " checked runs wrong (optimised build; -G not built)",
      static_cast<double>(failed) / checked,
      failed > 0 ? "holds for the optimised build (the -G half is not measured)" : "not reproduced in this run");
}

// C18: seed 000's seven steps at 1024 elements: 8.0 -> 0.3 ms, 26.7x from step 1 to step 7.
nlohmann::json claim_c18(const nlohmann::json& results) {
  const auto* first = timed_record(results, kOp, "interleaved_divergent", 1024, kInputs);
  const auto* last = timed_record(results, kOp, "multiple_per_thread", 1024, kInputs);
  if (first == nullptr || last == nullptr) return nullptr;
  const double ratio = median_ms(*first) / median_ms(*last);
  std::string measured = "at n=1024: step 1 " + ms(*first) + ", step 7 " + ms(*last);
  const std::int64_t n = largest_timed_n(results, kOp, kInputs);
  const auto* first_large = timed_record(results, kOp, "interleaved_divergent", n, kInputs);
  const auto* last_large = timed_record(results, kOp, "multiple_per_thread", n, kInputs);
  if (first_large != nullptr && last_large != nullptr)
    measured +=
        "; at n=" + std::to_string(n) + ": " + format_fixed(median_ms(*first_large) / median_ms(*last_large), 2) + "x";
  return verdict("C18", "Reduction 7-step ladder on 1024 elements: 8.0, 4.0, 2.0, 1.5, 1.0, 0.5, 0.3 ms", "seed 000",
                 "26.7x from step 1 to step 7", measured, ratio, speedup_verdict(ratio, 8.0 / 0.3));
}

// C19: shared memory 100 GB/s, warp shuffle 800 GB/s, CUB 850 GB/s.
nlohmann::json claim_c19(const nlohmann::json& results) {
  const std::int64_t n = largest_timed_n(results, kOp, kInputs);
  const auto* shared = timed_record(results, kOp, "sequential", n, kInputs);
  const auto* shuffle = timed_record(results, kOp, "shuffle_atomic", n, kInputs);
  const auto* cub = timed_record(results, kOp, "cub", n, kInputs);
  if (shared == nullptr || shuffle == nullptr || cub == nullptr) return nullptr;
  auto gbps = [](const nlohmann::json& r) { return r["roofline"].value("gbps", 0.0); };
  const double ratio = gbps(*shuffle) / gbps(*shared);
  return verdict("C19", "Reduction: shared memory 100 GB/s, warp shuffle 800 GB/s, CUB 850 GB/s", "seed 000",
                 "shuffle 8x the shared-memory tree; CUB 1.06x shuffle",
                 "sequential " + format_fixed(gbps(*shared), 0) + " GB/s, shuffle_atomic " +
                     format_fixed(gbps(*shuffle), 0) + " GB/s, cub " + format_fixed(gbps(*cub), 0) +
                     " GB/s at n=" + std::to_string(n),
                 ratio, speedup_verdict(ratio, 8.0));
}

// C20: the divergence-free reduction is 3.2x faster than the naive one; shuffles 4.5x.
nlohmann::json claim_c20(const nlohmann::json& results) {
  const std::int64_t n = largest_timed_n(results, kOp, kInputs);
  const auto* naive = timed_record(results, kOp, "interleaved_divergent", n, kInputs);
  const auto* divergence_free = timed_record(results, kOp, "interleaved_strided", n, kInputs);
  const auto* shuffle = timed_record(results, kOp, "shuffle_atomic", n, kInputs);
  if (naive == nullptr || divergence_free == nullptr || shuffle == nullptr) return nullptr;
  const double ratio = median_ms(*naive) / median_ms(*divergence_free);
  const double shuffle_ratio = median_ms(*naive) / median_ms(*shuffle);
  return verdict("C20", "Divergence-free reduction 3.2x faster than naive; shuffle 4.5x", "seed 000",
                 "3.2x (strided index), 4.5x (shuffles)",
                 "interleaved_strided " + format_fixed(ratio, 2) + "x, shuffle_atomic " +
                     format_fixed(shuffle_ratio, 2) + "x over interleaved_divergent at n=" + std::to_string(n),
                 ratio, speedup_verdict(ratio, 3.2) + "; shuffle: " + speedup_verdict(shuffle_ratio, 4.5));
}

}  // namespace

void register_reduce(Registry& registry) {
  Op f32 = reduce_op<float>("reduce_sum_f32", "sum of fp32 values, fp32 result", ladder<float>());
  // One array past 2^31 elements (8 GiB): 64-bit indexing in every pass.
  f32.test_problems.push_back({(std::int64_t{1} << 31) + 7});
  registry.add(std::move(f32));
  registry.add(
      reduce_op<std::int32_t>("reduce_sum_i32", "sum of int32 values, wrapping on overflow", ladder<std::int32_t>()));
  registry.add(reduce_op<float, double>(
      "reduce_sum_f32_f64", "sum of fp32 values carried and returned in double",
      {reading<float, double>("shuffle_atomic", "16-byte loads, double sums, one double atomicAdd per block",
                              Role::ladder, rv::shuffle_atomic_f64),
       reading<float, double>("single_pass", "16-byte loads, double sums, last block adds the partials", Role::ladder,
                              rv::single_pass_f64),
       reading<float, double>("tile_atomic",
                              "one 2048-element tile per block, double sums, one double atomicAdd per block",
                              Role::ladder, rv::tile_atomic_f64),
       reading<float, double>("tile_deterministic", "8192-element tiles, double sums, two-level last-block finish",
                              Role::ladder, rv::tile_deterministic_f64),
       reading<float, double>("cub", "cub::DeviceReduce::TransformReduce to double, the library baseline",
                              Role::baseline, rv::cub_sum_f64)}));
  registry.add(ClaimCheck{"C16", kOp, claim_c16});
  registry.add(ClaimCheck{"C17", kOp, claim_c17});
  registry.add(ClaimCheck{"C18", kOp, claim_c18});
  registry.add(ClaimCheck{"C19", kOp, claim_c19});
  registry.add(ClaimCheck{"C20", kOp, claim_c20});
}

}  // namespace cudalab::harness
