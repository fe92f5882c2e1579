#include "harness/roofline.hpp"

#include <algorithm>

namespace cudalab::harness {

RooflinePoint roofline(const Ceilings& ceilings, const Work& work, double seconds) {
  RooflinePoint p;
  const double bytes = work.bytes_read + work.bytes_written;
  const bool read_mostly = work.bytes_written < 0.01 * work.bytes_read;
  p.memory_ceiling_gbps = read_mostly ? ceilings.read_gbps : ceilings.copy_gbps();
  p.compute_ceiling_tflops = work.unit == ComputeUnit::bf16_tensor_cores ? ceilings.bf16_tensor_tflops
                                                                         : ceilings.fp32_tflops;
  if (seconds > 0) {
    p.gbps = bytes / seconds / 1e9;
    p.tflops = work.flops / seconds / 1e12;
  }
  const double memory_seconds = p.memory_ceiling_gbps > 0 ? bytes / (p.memory_ceiling_gbps * 1e9) : 0;
  const double compute_seconds =
      p.compute_ceiling_tflops > 0 ? work.flops / (p.compute_ceiling_tflops * 1e12) : 0;
  p.floor_seconds = std::max(memory_seconds, compute_seconds);
  p.bound = compute_seconds > memory_seconds ? "compute" : "memory";
  p.fraction = seconds > 0 ? p.floor_seconds / seconds : 0;
  return p;
}

}  // namespace cudalab::harness
