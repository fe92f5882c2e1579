// Registry entries for scan: the workloads (input, poisoned output, CPU reference), one op per
// (kind, type) configuration timed, the ladder, the CUB baseline, and claim C21.
#include <memory>
#include <string>
#include <type_traits>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/scan/reference.hpp"
#include "ops/scan/variants.hpp"

namespace cudalab::harness {
namespace {

using scan_variants::ScanKind;

template <typename T>
class ScanWorkload final : public Workload {
 public:
  ScanWorkload(std::int64_t n, ScanKind kind)
      : n_(n), kind_(kind), in_(n), out_(n), host_in_(new T[n > 0 ? n : 1]), host_out_(new T[n > 0 ? n : 1]) {}

  void generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream) override {
    fill_random(in_.data(), n_, seed, distribution, stream);
    if (n_ > 0)
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_in_.get(), in_.data(), in_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  void poison(cudaStream_t stream) override { harness::poison(out_.data(), out_.bytes(), stream, kPoisonByte); }

  Comparison check(cudaStream_t stream) override {
    if (n_ > 0)
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_out_.get(), out_.data(), out_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    return check_scan(host_in_.get(), host_out_.get(), n_, kind_);
  }

  void launch(scan_variants::Launcher<T> launcher, cudaStream_t stream) {
    launcher(in_.data(), out_.data(), n_, kind_, workspace_, stream);
  }

 private:
  static constexpr unsigned char kPoisonByte = std::is_integral_v<T> ? kIntegerPoisonByte : kFloatPoisonByte;
  std::int64_t n_;
  ScanKind kind_;
  DeviceBuffer<T> in_, out_;
  GrowingWorkspace workspace_;
  // Left uninitialised (no zero-fill of gigabytes): every element is copied over before it is read.
  std::unique_ptr<T[]> host_in_, host_out_;
};

std::string too_large_for_one_block(std::int64_t capacity, const Problem& p) {
  if (p.n <= capacity) return "";
  return "one block scans at most " + std::to_string(capacity) + " elements";
}

template <typename T>
Variant variant(std::string id, std::string technique, Role role, scan_variants::Launcher<T> launcher,
                std::int64_t one_block_capacity = 0) {
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.role = role;
  v.launch = [launcher](Workload& w, cudaStream_t s) { static_cast<ScanWorkload<T>&>(w).launch(launcher, s); };
  if (one_block_capacity > 0)
    v.unsupported = [one_block_capacity](const DeviceInfo&, const Problem& p) {
      return too_large_for_one_block(one_block_capacity, p);
    };
  return v;
}

template <typename T>
Op scan_op(std::string name, std::string summary, ScanKind kind, std::vector<Problem> bench_problems) {
  namespace v = scan_variants;
  Op op;
  op.name = std::move(name);
  op.summary = std::move(summary);
  op.bench_problems = std::move(bench_problems);
  // Empty; around a warp; the single-block capacities (1024, 2048) and one past them; one past
  // the 3072- and 4096-element tiles; a prime; two- and three-level hierarchies; 2^28 (1 GiB).
  op.test_problems = {{0},    {1},    {31},   {32},      {33},      {1024},   {2048},
                      {2049}, {3073}, {4097}, {1000003}, {1 << 24}, {1 << 28}};
  op.work = [](const Problem& p) {
    Work w;
    w.bytes_read = static_cast<double>(sizeof(T)) * static_cast<double>(p.n);
    w.bytes_written = static_cast<double>(sizeof(T)) * static_cast<double>(p.n);
    w.flops = static_cast<double>(p.n);
    return w;
  };
  // Input and output, plus the workspace: tile sums or status words, well under n/64 bytes for
  // every variant (CUB's included), and a margin for the smallest sizes.
  op.device_bytes = [](const Problem& p) {
    return static_cast<std::size_t>(p.n) * 2 * sizeof(T) + static_cast<std::size_t>(p.n) / 64 + (1u << 20);
  };
  // Host copies of input and output, plus the reference's checkpoints.
  op.host_bytes = [](const Problem& p) {
    return static_cast<std::size_t>(p.n) * 2 * sizeof(T) + static_cast<std::size_t>(p.n) / 1024 + (1u << 20);
  };
  op.make_workload = [kind](const Problem& p) { return std::make_unique<ScanWorkload<T>>(p.n, kind); };
  op.variants = {
      variant<T>("hillis_steele", "one block: Hillis-Steele, log2(n) steps of n additions, double-buffered",
                 Role::ladder, v::hillis_steele<T>, v::kHillisSteeleMaxItems),
      variant<T>("blelloch", "one block: Blelloch up-sweep/down-sweep tree, 2n additions", Role::ladder, v::blelloch<T>,
                 v::kBlellochMaxItems),
      variant<T>("blelloch_padded", "one block: Blelloch with a padding word per 32 against bank conflicts",
                 Role::ladder, v::blelloch_padded<T>, v::kBlellochMaxItems),
      variant<T>("scan_then_propagate_hillis_steele",
                 "Hillis-Steele scan per 1024-element tile, scan of tile sums, add-back pass", Role::ladder,
                 v::scan_then_propagate_hillis_steele<T>),
      variant<T>("scan_then_propagate", "padded Blelloch scan per 2048-element tile, scan of tile sums, add-back pass",
                 Role::ladder, v::scan_then_propagate<T>),
      variant<T>("reduce_then_scan", "tile sums pass, scan of sums, seeded tile scans; float4 loads, warp shuffles",
                 Role::ladder, v::reduce_then_scan<T>),
      variant<T>("decoupled_lookback", "single pass: tiles publish aggregate/prefix words, warp-wide look-back",
                 Role::ladder, v::decoupled_lookback<T>),
      variant<T>("cub", "cub::DeviceScan (CCCL), temporary storage kept across launches", Role::baseline,
                 v::cub_device_scan<T>),
  };
  return op;
}

// C21: "Hillis-Steele is fine for small inputs, Blelloch (work-efficient) wins for large ones".
// Small: the single-block scans at n = 1024. Large: the largest timed n, where both scans serve
// as the per-tile scan of the same scan-then-propagate structure.
nlohmann::json claim_c21(const nlohmann::json& results) {
  const std::string op = "scan_inclusive_i32";
  const std::int64_t small_n = 1024;
  const std::int64_t large_n = largest_timed_n(results, op);
  const auto* hs_small = timed_record(results, op, "hillis_steele", small_n);
  const auto* blelloch_small = timed_record(results, op, "blelloch_padded", small_n);
  const auto* hs_large = timed_record(results, op, "scan_then_propagate_hillis_steele", large_n);
  const auto* blelloch_large = timed_record(results, op, "scan_then_propagate", large_n);
  if (hs_small == nullptr || blelloch_small == nullptr || hs_large == nullptr || blelloch_large == nullptr ||
      large_n <= small_n)
    return nullptr;
  // Ratios are Hillis-Steele's time over Blelloch's: above 1, Blelloch is faster.
  const double small_ratio = median_ms(*hs_small) / median_ms(*blelloch_small);
  const double large_ratio = median_ms(*hs_large) / median_ms(*blelloch_large);
  const bool fine_small = small_ratio <= 1.10;
  const bool wins_large = large_ratio > 1.03;
  std::string outcome;
  if (fine_small && wins_large) {
    outcome = "holds";
  } else if (fine_small) {
    outcome = "holds partly: Hillis-Steele is fine for small inputs, but Blelloch does not win on large ones";
  } else if (wins_large) {
    outcome = "holds partly: Blelloch wins on large inputs, and on small ones too";
  } else {
    outcome = "does not hold: Hillis-Steele is slower for small inputs and not for large ones";
  }
  return verdict("C21", "Hillis-Steele is fine for small inputs, Blelloch (work-efficient) wins for large ones",
                 "seed 000",
                 "n=1024: Hillis-Steele within 10% of Blelloch (ratio <= 1.1); large n: Blelloch faster (ratio > 1)",
                 "n=1024: hillis_steele " + format_fixed(1e3 * median_ms(*hs_small), 2) + " us, blelloch_padded " +
                     format_fixed(1e3 * median_ms(*blelloch_small), 2) + " us (ratio " + format_fixed(small_ratio, 3) +
                     "); n=" + std::to_string(large_n) + " scan-then-propagate: Hillis-Steele tiles " +
                     format_fixed(median_ms(*hs_large), 4) + " ms, Blelloch tiles " +
                     format_fixed(median_ms(*blelloch_large), 4) + " ms",
                 large_ratio, outcome);
}

}  // namespace

void register_scan(Registry& registry) {
  registry.add(scan_op<std::int32_t>("scan_inclusive_i32", "inclusive prefix sum, int32 (wrapping)",
                                     ScanKind::inclusive, {{1 << 10}, {1 << 20}, {1 << 28}}));
  registry.add(scan_op<std::int32_t>("scan_exclusive_i32", "exclusive prefix sum, int32 (wrapping)",
                                     ScanKind::exclusive, {{1 << 20}, {1 << 28}}));
  registry.add(
      scan_op<float>("scan_inclusive_f32", "inclusive prefix sum, fp32", ScanKind::inclusive, {{1 << 20}, {1 << 28}}));
  registry.add(ClaimCheck{"C21", "scan_inclusive_i32", claim_c21});
}

}  // namespace cudalab::harness
