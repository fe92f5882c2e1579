// Registry entries for vector add: the workload (inputs, poisoned output, CPU reference), the
// ladder, the Thrust baseline, and the claims its numbers answer (C02, C03).
#include <memory>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/vecadd/variants.hpp"

namespace cudalab::harness {
namespace {

class VecaddWorkload final : public Workload {
 public:
  explicit VecaddWorkload(std::int64_t n)
      : n_(n), a_(n), b_(n), c_(n), host_a_(new float[n]), host_b_(new float[n]), host_c_(new float[n]) {}

  void generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream) override {
    fill_random(a_.data(), n_, seed, distribution, stream);
    fill_random(b_.data(), n_, mix64(seed), distribution, stream);
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_a_.get(), a_.data(), a_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_b_.get(), b_.data(), b_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  void poison(cudaStream_t stream) override { harness::poison(c_.data(), c_.bytes(), stream); }

  Comparison check(cudaStream_t stream) override {
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_c_.get(), c_.data(), c_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    const float* a = host_a_.get();
    const float* b = host_b_.get();
    return compare_fp32(host_c_.get(), n_, Tolerance::fp32_rounded(),
                        [a, b](std::int64_t i) { return static_cast<double>(a[i]) + static_cast<double>(b[i]); });
  }

  void launch(void (*launcher)(const float*, const float*, float*, std::int64_t, cudaStream_t),
              cudaStream_t stream) const {
    launcher(a_.data(), b_.data(), c_.data(), n_, stream);
  }

 private:
  std::int64_t n_;
  DeviceBuffer<float> a_, b_, c_;
  // Host copies are left uninitialised (no std::vector zero-fill of gigabytes): every element
  // is overwritten by a copy before it is read.
  std::unique_ptr<float[]> host_a_, host_b_, host_c_;
};

using Launcher = void (*)(const float*, const float*, float*, std::int64_t, cudaStream_t);

Variant variant(std::string id, std::string technique, Role role, Launcher launcher) {
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.role = role;
  v.launch = [launcher](Workload& w, cudaStream_t s) { static_cast<VecaddWorkload&>(w).launch(launcher, s); };
  return v;
}

// C02: seed 003 says staging the operands through shared memory lowers the kernel's time.
nlohmann::json claim_c02(const nlohmann::json& results) {
  const std::int64_t n = largest_timed_n(results, "vecadd");
  const auto* plain = timed_record(results, "vecadd", "one_per_thread", n);
  const auto* staged = timed_record(results, "vecadd", "shared_staging", n);
  if (plain == nullptr || staged == nullptr) return nullptr;
  const double ratio = median_ms(*plain) / median_ms(*staged);
  return verdict(
      "C02", "Staging vector-add operands through shared memory lowers the kernel's time", "seed 003",
      "shared_staging faster than one_per_thread (ratio > 1)",
      "one_per_thread " + format_fixed(median_ms(*plain), 4) + " ms, shared_staging " +
          format_fixed(median_ms(*staged), 4) + " ms at n=" + std::to_string(n),
      ratio, ratio > 1.03 ? "holds" : "does not hold: each value is used once, so staging adds work and saves none");
}

// C03: seed 000 says vector add is memory bound, 1/12 FLOP per byte, at most ~0.1% of FP32 peak.
nlohmann::json claim_c03(const nlohmann::json& results) {
  const std::int64_t n = largest_timed_n(results, "vecadd");
  const auto* best = fastest_record(results, "vecadd", n);
  const auto& ceilings = results.value("ceilings", nlohmann::json::object());
  const double fp32_tflops = ceilings.value("fp32_tflops", 0.0);
  if (best == nullptr || fp32_tflops <= 0) return nullptr;
  const auto& point = (*best)["roofline"];
  const double flop_fraction = point.value("tflops", 0.0) / fp32_tflops;
  const bool memory_bound = point.value("bound", "") == "memory";
  std::string outcome;
  if (!memory_bound) {
    outcome = "does not hold: the roofline puts it on the compute side";
  } else if (flop_fraction <= 0.0015) {
    outcome = "holds";
  } else {
    outcome = "holds partly: memory bound, but this GPU's bandwidth-to-FLOP ratio lets it reach " +
              format_fixed(100 * flop_fraction, 2) + "% of FP32 peak, not ~0.1%";
  }
  return verdict("C03", "Vector add is memory bound: 1/12 FLOP/byte, at most ~0.1% of FP32 peak", "seed 000",
                 "memory bound; <= ~0.1% of FP32 peak",
                 (*best)["variant"].get<std::string>() + " at n=" + std::to_string(n) + ": " +
                     format_fixed(100 * point.value("fraction", 0.0), 1) + "% of its memory roofline, " +
                     format_fixed(100 * flop_fraction, 3) + "% of measured FP32 peak",
                 flop_fraction, outcome);
}

}  // namespace

void register_vecadd_host_pattern(Registry& registry);

void register_vecadd(Registry& registry) {
  namespace v = vecadd_variants;
  Op op;
  op.name = "vecadd";
  op.summary = "c = a + b, fp32";
  op.bench_problems = {{1 << 20}, {1 << 24}, {1 << 28}};
  // Edge sizes around a warp, a prime that is no multiple of 4 or of a block, and one array
  // larger than 2^31 bytes (2^29 + 3 floats) for 64-bit indexing and the float4 tail.
  op.test_problems = {{1}, {31}, {32}, {33}, {1000003}, {1 << 24}, {(std::int64_t{1} << 29) + 3}};
  op.work = [](const Problem& p) {
    Work w;
    w.bytes_read = 8.0 * static_cast<double>(p.n);
    w.bytes_written = 4.0 * static_cast<double>(p.n);
    w.flops = static_cast<double>(p.n);
    return w;
  };
  op.device_bytes = [](const Problem& p) { return static_cast<std::size_t>(p.n) * 3 * sizeof(float); };
  op.host_bytes = op.device_bytes;
  op.make_workload = [](const Problem& p) { return std::make_unique<VecaddWorkload>(p.n); };
  op.variants = {
      variant("one_per_thread", "one element per thread, a 256-thread block per 256 elements", Role::ladder,
              v::one_per_thread),
      variant("grid_stride", "grid sized to resident capacity, threads stride through the array", Role::ladder,
              v::grid_stride),
      variant("shared_staging", "seed 003: operands staged through shared memory behind a barrier", Role::ladder,
              v::shared_staging),
      variant("vectorized", "16-byte float4 loads and stores, one float4 per thread", Role::ladder, v::vectorized),
      variant("vectorized_unroll4", "four float4s per operand per thread, loads issued before the adds", Role::ladder,
              v::vectorized_unroll4),
      variant("thrust", "thrust::transform (CCCL), the library baseline", Role::baseline, v::thrust_transform),
  };
  registry.add(std::move(op));
  registry.add(ClaimCheck{"C02", "vecadd", claim_c02});
  registry.add(ClaimCheck{"C03", "vecadd", claim_c03});
  register_vecadd_host_pattern(registry);
}

}  // namespace cudalab::harness
