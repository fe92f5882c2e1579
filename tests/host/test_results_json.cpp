#include <gtest/gtest.h>

#include "cudalab/error.hpp"
#include "harness/claims.hpp"
#include "harness/results.hpp"

namespace cudalab::harness {
namespace {

Record timed_record(const std::string& variant, std::int64_t n, double median_ms, Role role = Role::ladder) {
  Record r;
  r.op = "vecadd";
  r.variant = variant;
  r.technique = "technique of " + variant;
  r.role = role;
  r.problem = Problem({{"n", n}}, DType::f32);
  r.work = {8.0 * n, 4.0 * n, 1.0 * n};
  r.unit = ComputeUnit::fp32_cuda_cores;
  r.outcome = Outcome::passed;
  r.seed = 0xfeedfacecafebeefull;
  r.distribution = "uniform";
  r.comparison.count = n;
  r.comparison.max_abs_error = 1e-7;
  r.timed = true;
  r.time_ms = {12, median_ms, median_ms * 0.99, median_ms * 1.05, median_ms, 0.004};
  Ceilings c;
  c.copy_kernel_gbps = 3000;
  c.fp32_tflops = 60;
  r.roofline_point = roofline(c, r.work, r.unit, median_ms * 1e-3);
  r.speedup_vs_first = 1.25;
  return r;
}

TEST(ResultsJson, RecordRoundTrips) {
  const Record original = timed_record("vectorized", 1 << 20, 0.0123);
  const Record back = nlohmann::json(original).get<Record>();
  EXPECT_EQ(back.op, original.op);
  EXPECT_EQ(back.variant, original.variant);
  EXPECT_EQ(back.technique, original.technique);
  EXPECT_EQ(back.role, original.role);
  EXPECT_EQ(back.problem, original.problem);
  EXPECT_EQ(back.unit, original.unit);
  EXPECT_DOUBLE_EQ(back.work.bytes_read, original.work.bytes_read);
  EXPECT_EQ(back.outcome, original.outcome);
  EXPECT_EQ(back.seed, original.seed);
  EXPECT_EQ(back.comparison.count, original.comparison.count);
  EXPECT_TRUE(back.timed);
  EXPECT_DOUBLE_EQ(back.time_ms.median, original.time_ms.median);
  EXPECT_EQ(back.time_ms.count, original.time_ms.count);
  EXPECT_DOUBLE_EQ(back.roofline_point.fraction, original.roofline_point.fraction);
  EXPECT_EQ(back.roofline_point.bound, "memory");
  EXPECT_DOUBLE_EQ(back.speedup_vs_first, 1.25);
}

TEST(ResultsJson, ProblemsRoundTripWithDtypeAndParameters) {
  const Problem p({{"n", 1000003}}, DType::i32, {{"exclusive", 1}});
  const nlohmann::json j = p;
  EXPECT_EQ(j["key"], p.key());
  EXPECT_EQ(j["dtype"], "i32");
  EXPECT_EQ(j.get<Problem>(), p);
  EXPECT_THROW((nlohmann::json{{"dtype", "f13"}}.get<Problem>()), Error);
}

TEST(ResultsJson, FailedRecordKeepsItsComparisonAndHasNoTime) {
  Record failed = timed_record("broken", 33, 1.0);
  failed.outcome = Outcome::failed;
  failed.timed = false;
  failed.comparison.mismatches = 3;
  const nlohmann::json j = failed;
  EXPECT_FALSE(j.contains("time_ms"));
  const Record back = j.get<Record>();
  EXPECT_EQ(back.outcome, Outcome::failed);
  EXPECT_EQ(back.comparison.mismatches, 3);
  EXPECT_FALSE(back.timed);
}

TEST(ResultsJson, ProvenanceAndCeilingsRoundTrip) {
  Provenance p;
  p.commit = "0123456789abcdef";
  p.dirty = true;
  p.gpu_name = "NVIDIA H100 80GB HBM3";
  p.sm_count = 132;
  p.sm_clock_mhz_end = 1980;
  p.command_line = "cudalab bench";
  const Provenance back = nlohmann::json(p).get<Provenance>();
  EXPECT_EQ(back.commit, p.commit);
  EXPECT_TRUE(back.dirty);
  EXPECT_EQ(back.gpu_name, p.gpu_name);
  EXPECT_EQ(back.sm_count, 132);
  EXPECT_EQ(back.sm_clock_mhz_end, 1980u);
  Ceilings c;
  c.read_gbps = 3210.5;
  c.launch_latency_us = 7.25;
  c.bf16_tensor_tflops = 800;
  c.fp16_tensor_tflops = 790;
  c.tf32_tensor_tflops = 370;
  const Ceilings c_back = nlohmann::json(c).get<Ceilings>();
  EXPECT_DOUBLE_EQ(c_back.read_gbps, 3210.5);
  EXPECT_DOUBLE_EQ(c_back.bf16_tensor_tflops, 800);
  EXPECT_DOUBLE_EQ(c_back.fp16_tensor_tflops, 790);
  EXPECT_DOUBLE_EQ(c_back.tf32_tensor_tflops, 370);
  EXPECT_DOUBLE_EQ(c_back.launch_latency_us, 7.25);
}

TEST(ResultsJson, MissingKeysTakeDefaults) {
  const Record r = nlohmann::json{{"op", "vecadd"}, {"variant", "x"}}.get<Record>();
  EXPECT_EQ(r.outcome, Outcome::skipped);
  EXPECT_FALSE(r.timed);
}

TEST(ResultsJson, GpuSlug) {
  EXPECT_EQ(gpu_slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(gpu_slug("  NVIDIA GeForce RTX 4090 "), "nvidia-geforce-rtx-4090");
  EXPECT_EQ(gpu_slug("***"), "unknown-gpu");
}

TEST(Claims, VecaddClaimsAreJudgedFromRecords) {
  Ceilings ceilings;
  ceilings.copy_kernel_gbps = 3000;
  ceilings.fp32_tflops = 60;
  const std::int64_t n = 1 << 28;
  const std::vector<Record> records = {timed_record("one_per_thread", n, 1.10), timed_record("shared_staging", n, 1.21),
                                       timed_record("vectorized", n, 1.08)};
  const nlohmann::json results = make_results(Provenance{}, ceilings, records, nlohmann::json::array());
  const nlohmann::json* c02 = nullptr;
  const nlohmann::json* c03 = nullptr;
  for (const auto& c : results["claims"]) {
    if (c["id"] == "C02") c02 = &c;
    if (c["id"] == "C03") c03 = &c;
  }
  ASSERT_NE(c02, nullptr);
  EXPECT_NEAR((*c02)["ratio"].get<double>(), 1.10 / 1.21, 1e-12);
  EXPECT_EQ((*c02)["verdict"].get<std::string>().rfind("does not hold", 0), 0u);
  ASSERT_NE(c03, nullptr);
  // vectorized: 2^28 flops in 1.08 ms = 0.2485 TFLOP/s = 0.414% of 60: memory bound, but not ~0.1%.
  EXPECT_NEAR((*c03)["ratio"].get<double>(), n / 1.08e-3 / 1e12 / 60, 1e-9);
  EXPECT_EQ((*c03)["verdict"].get<std::string>().rfind("holds partly", 0), 0u);
}

TEST(Claims, AbsentDataGivesNoVerdict) {
  const nlohmann::json results = make_results(Provenance{}, Ceilings{}, {}, nlohmann::json::array());
  EXPECT_TRUE(results["claims"].empty());
}

}  // namespace
}  // namespace cudalab::harness
