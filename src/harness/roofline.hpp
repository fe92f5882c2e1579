// The GPU's measured ceilings (from `cudalab probe`) and the roofline arithmetic that turns a
// kernel's bytes, flops and time into "% of what this GPU can do".
#pragma once

#include <string>

namespace cudalab::harness {

// Every rate is measured on the running GPU by the probe, except the datasheet_* figures, which
// are derived from device attributes (clocks, bus width, SM count) for comparison only.
struct Ceilings {
  double copy_kernel_gbps = 0;    // cudalab's copy kernel, bytes read + bytes written
  double memcpy_d2d_gbps = 0;     // cudaMemcpyAsync device-to-device, read + written
  double read_gbps = 0;           // read-only streaming kernel
  double fp32_tflops = 0;         // FFMA chains, 2 flops per FMA
  double bf16_tensor_tflops = 0;  // cuBLAS BF16 GEMM (fp32 accumulate) on random data
  double fp16_tensor_tflops = 0;  // cuBLAS FP16 GEMM (fp32 accumulate) on random data
  double tf32_tensor_tflops = 0;  // cuBLAS FP32 GEMM in TF32 tensor-core mode on random data
  double fp8_tensor_tflops = 0;   // cuBLASLt FP8 (e4m3) GEMM, bf16 out, fp32 accumulate; 0 before compute 8.9
  double h2d_pageable_gbps = 0;
  double h2d_pinned_gbps = 0;
  double d2h_pageable_gbps = 0;
  double d2h_pinned_gbps = 0;
  double launch_latency_us = 0;     // empty kernel: launch + synchronize, round trip
  double launch_throughput_us = 0;  // empty kernel: back-to-back launches, per launch
  // To the other GPUs of the host this one has peer access to (0 on a single-GPU host): how many,
  // and the best of them for cudaMemcpyPeerAsync one way and both ways at once (bytes moved in
  // both directions over the time), and a 4-byte copy's time.
  int peer_gpus = 0;
  double peer_gbps = 0;
  double peer_bidirectional_gbps = 0;
  double peer_latency_us = 0;

  double datasheet_dram_gbps = 0;  // 2 x memory clock x bus width
  double datasheet_fp32_tflops = 0;
  double datasheet_bf16_tflops = 0;  // 0 where the architecture's tensor rate is not tabulated
  double datasheet_pcie_gbps = 0;    // from NVML's max link generation and width; 0 if unknown

  // A copy's rate: the better of cudalab's kernel and cudaMemcpy.
  double copy_gbps() const { return copy_kernel_gbps > memcpy_d2d_gbps ? copy_kernel_gbps : memcpy_d2d_gbps; }
  // The rate writes cost, derived from the two measurements: a copy of S bytes takes S/read +
  // S/write = 2S/copy. Falls back to the copy rate if the measurements contradict the model.
  double write_gbps() const;
};

// The unit a variant's arithmetic runs on; its measured rate is the compute ceiling the variant is
// held to. fp64 and integer rates are not measured yet: their rows are judged by memory alone.
enum class ComputeUnit {
  fp32_cuda_cores,
  fp64_cuda_cores,
  integer,
  tf32_tensor_cores,
  bf16_tensor_cores,
  fp16_tensor_cores,
  fp8_tensor_cores
};
const char* to_string(ComputeUnit unit);
// The measured rate of `unit` in TFLOP/s (TOP/s); 0 where the probe does not measure it.
double compute_ceiling_tflops(const Ceilings& ceilings, ComputeUnit unit);

// What a problem needs at the least, whatever a variant does: each input read once, each output
// written once, and the arithmetic of the algorithm.
struct Work {
  double bytes_read = 0;
  double bytes_written = 0;
  double flops = 0;
};

struct RooflinePoint {
  double gbps = 0;  // effective bandwidth: minimum bytes / time (1 GB = 1e9 B)
  double tflops = 0;
  double memory_ceiling_gbps = 0;  // (read + written bytes) / memory floor: this mix's ceiling
  double compute_ceiling_tflops = 0;
  double floor_seconds = 0;  // max(bytes / memory ceiling, flops / compute ceiling)
  std::string bound;         // "memory" or "compute": which term sets the floor
  double fraction = 0;       // floor / measured time: 1.0 means at the ceiling
};

// The memory floor prices reads at the read-only rate and writes at write_gbps(), so a copy is
// held to the copy rate, a reduction to the read rate, and a 2-read-1-write kernel (vector add)
// to the rate that mix allows, which is higher than a copy's: DRAM reads are cheaper than writes.
// The compute floor is the flops over the rate of `unit`.
RooflinePoint roofline(const Ceilings& ceilings, const Work& work, ComputeUnit unit, double seconds);

}  // namespace cudalab::harness
