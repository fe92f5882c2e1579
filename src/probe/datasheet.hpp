// Datasheet-style peak figures derived from device attributes, printed beside the measured
// ceilings so a user sees how far the card gets from its paper numbers.
#pragma once

#include "cudalab/device.hpp"

namespace cudalab::probe {

// FP32 lanes (FFMA per clock) per SM; 0 for an architecture not in the table.
int fp32_lanes_per_sm(int compute_capability);
// Dense BF16 tensor-core flops per clock per SM with fp32 accumulate, at the rate of the
// data-centre and workstation parts (GeForce parts of 8.6/8.9 run fp32 accumulate at half this);
// 0 for an architecture not in the table.
int bf16_tensor_flops_per_clock_per_sm(int compute_capability);

double datasheet_dram_gbps(const DeviceInfo& device);    // 2 (double data rate) x clock x bus width
double datasheet_fp32_tflops(const DeviceInfo& device);  // SMs x lanes x 2 x peak clock
double datasheet_bf16_tflops(const DeviceInfo& device);  // SMs x tensor rate x peak clock

}  // namespace cudalab::probe
