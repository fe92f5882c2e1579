#include "probe/datasheet.hpp"

namespace cudalab::probe {

int fp32_lanes_per_sm(int cc) {
  switch (cc) {
    case 70:
    case 72:
    case 75:
    case 80: return 64;
    case 86:
    case 87:
    case 89:
    case 90:
    case 100:
    case 103:
    case 120: return 128;
    default: return 0;
  }
}

int bf16_tensor_flops_per_clock_per_sm(int cc) {
  // From the vendor's dense BF16 figures: A100 312 TFLOP/s = 108 SMs x 1.41 GHz x 2048;
  // H100 SXM 989 = 132 x 1.83 GHz x 4096; RTX A6000 (8.6) 154.8 = 84 x 1.80 GHz x 1024;
  // L40S (8.9) 362 = 142 x 2.52 GHz x ~1024.
  switch (cc) {
    case 80: return 2048;
    case 86: return 1024;
    case 89: return 1024;
    case 90: return 4096;
    default: return 0;
  }
}

double datasheet_dram_gbps(const DeviceInfo& d) {
  return 2.0 * d.memory_clock_khz * 1e3 * (d.memory_bus_width_bits / 8.0) / 1e9;
}

double datasheet_fp32_tflops(const DeviceInfo& d) {
  return d.sm_count * static_cast<double>(fp32_lanes_per_sm(d.compute_capability())) * 2.0 * d.sm_clock_khz * 1e3 /
         1e12;
}

double datasheet_bf16_tflops(const DeviceInfo& d) {
  return d.sm_count * static_cast<double>(bf16_tensor_flops_per_clock_per_sm(d.compute_capability())) * d.sm_clock_khz *
         1e3 / 1e12;
}

}  // namespace cudalab::probe
