#include <gtest/gtest.h>

#include "harness/nvml.hpp"
#include "harness/roofline.hpp"
#include "probe/datasheet.hpp"

namespace cudalab::harness {
namespace {

Ceilings example_ceilings() {
  Ceilings c;
  c.copy_kernel_gbps = 3000;
  c.memcpy_d2d_gbps = 2900;
  c.read_gbps = 3300;
  c.fp32_tflops = 60;
  c.bf16_tensor_tflops = 750;
  return c;
}

TEST(Roofline, CopyCeilingIsTheBetterOfKernelAndMemcpy) {
  Ceilings c = example_ceilings();
  EXPECT_DOUBLE_EQ(c.copy_gbps(), 3000);
  c.memcpy_d2d_gbps = 3100;
  EXPECT_DOUBLE_EQ(c.copy_gbps(), 3100);
}

TEST(Roofline, WriteRateFollowsFromCopyAndRead) {
  const Ceilings c = example_ceilings();  // copy 3000, read 3300
  // 2/3000 = 1/3300 + 1/w  =>  w = 1 / (2/3000 - 1/3300)
  EXPECT_NEAR(c.write_gbps(), 1.0 / (2.0 / 3000 - 1.0 / 3300), 1e-9);
  Ceilings contradictory = c;
  contradictory.read_gbps = 1000;  // a copy faster than twice the read rate: the model breaks
  EXPECT_DOUBLE_EQ(contradictory.write_gbps(), 3000);
}

TEST(Roofline, ACopyIsHeldToTheCopyRate) {
  const double bytes = 1e9;
  const RooflinePoint p = roofline(example_ceilings(), Work{bytes, bytes, 0}, ComputeUnit::fp32_cuda_cores, 1e-3);
  EXPECT_NEAR(p.memory_ceiling_gbps, 3000, 1e-6);
  EXPECT_NEAR(p.floor_seconds, 2 * bytes / 3000e9, 1e-15);
}

TEST(Roofline, VectorAddIsHeldToItsReadWriteMix) {
  // 2^28 elements: 2 GiB read, 1 GiB written.
  const double n = 268435456;
  const Ceilings c = example_ceilings();
  const double floor = 8 * n / 3300e9 + 4 * n / (c.write_gbps() * 1e9);
  const RooflinePoint p = roofline(c, Work{8 * n, 4 * n, n}, ComputeUnit::fp32_cuda_cores, 1.2e-3);
  EXPECT_EQ(p.bound, "memory");
  EXPECT_NEAR(p.floor_seconds, floor, 1e-15);
  EXPECT_GT(p.memory_ceiling_gbps, 3000);  // reads are cheaper than writes
  EXPECT_LT(p.memory_ceiling_gbps, 3300);
  EXPECT_NEAR(p.fraction, floor / 1.2e-3, 1e-12);
  EXPECT_NEAR(p.gbps, 12 * n / 1.2e-3 / 1e9, 1e-9);
  EXPECT_NEAR(p.tflops, n / 1.2e-3 / 1e12, 1e-12);
}

TEST(Roofline, ReadOnlyKernelsUseTheReadRate) {
  const Work reduction{4e9, 0, 1e9};
  EXPECT_NEAR(roofline(example_ceilings(), reduction, ComputeUnit::fp32_cuda_cores, 1.0).memory_ceiling_gbps, 3300,
              1e-9);
}

TEST(Roofline, ArithmeticHeavyWorkIsComputeBound) {
  // 8192^3 GEMM in bf16: 1.1e12 flops over 750 TFLOP/s, 400 MB of traffic.
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  const Work gemm{2 * 2 * 8192.0 * 8192.0, 2 * 8192.0 * 8192.0, flops};
  const RooflinePoint p = roofline(example_ceilings(), gemm, ComputeUnit::bf16_tensor_cores, 2e-3);
  EXPECT_EQ(p.bound, "compute");
  EXPECT_NEAR(p.floor_seconds, flops / 750e12, 1e-12);
}

TEST(Roofline, EachUnitIsHeldToItsOwnCeiling) {
  Ceilings c = example_ceilings();
  c.fp32_tflops = 60;
  c.tf32_tensor_tflops = 400;
  const Work gemm{3 * 4 * 4096.0 * 4096.0, 4 * 4096.0 * 4096.0, 2.0 * 4096.0 * 4096.0 * 4096.0};
  // 137 TFLOP at 0.5 ms: 275 TFLOP/s would be 458% of the FP32 peak; against TF32 it is 69%.
  const RooflinePoint tf32 = roofline(c, gemm, ComputeUnit::tf32_tensor_cores, 0.5e-3);
  EXPECT_DOUBLE_EQ(tf32.compute_ceiling_tflops, 400);
  EXPECT_LT(tf32.fraction, 1.0);
  EXPECT_DOUBLE_EQ(roofline(c, gemm, ComputeUnit::fp32_cuda_cores, 0.5e-3).compute_ceiling_tflops, 60);
  // Units the probe does not measure leave the floor to memory.
  EXPECT_EQ(roofline(c, gemm, ComputeUnit::integer, 0.5e-3).bound, "memory");
}

TEST(Datasheet, H100SxmFiguresFromItsAttributes) {
  DeviceInfo h100;
  h100.compute_major = 9;
  h100.compute_minor = 0;
  h100.sm_count = 132;
  h100.sm_clock_khz = 1980000;
  h100.memory_clock_khz = 2619000;
  h100.memory_bus_width_bits = 5120;
  EXPECT_NEAR(probe::datasheet_dram_gbps(h100), 3352.32, 0.01);
  EXPECT_NEAR(probe::datasheet_fp32_tflops(h100), 132 * 128 * 2 * 1.98e9 / 1e12, 1e-9);
  EXPECT_NEAR(probe::datasheet_bf16_tflops(h100), 132 * 4096 * 1.98e9 / 1e12, 1e-9);
}

TEST(Datasheet, UnknownArchitectureGivesZeroNotAGuess) {
  DeviceInfo unknown;
  unknown.compute_major = 5;
  unknown.sm_count = 10;
  unknown.sm_clock_khz = 1000000;
  EXPECT_EQ(probe::datasheet_fp32_tflops(unknown), 0.0);
  EXPECT_EQ(probe::datasheet_bf16_tflops(unknown), 0.0);
}

TEST(Datasheet, PcieLinkRates) {
  EXPECT_NEAR(pcie_bytes_per_second(5, 16) / 1e9, 32.0 * 16 / 8 * 128 / 130, 1e-9);  // ~63.0 GB/s
  EXPECT_NEAR(pcie_bytes_per_second(3, 16) / 1e9, 8.0 * 16 / 8 * 128 / 130, 1e-9);   // ~15.75 GB/s
  EXPECT_EQ(pcie_bytes_per_second(0, 16), 0.0);
}

}  // namespace
}  // namespace cudalab::harness
