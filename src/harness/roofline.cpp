#include "harness/roofline.hpp"

#include <algorithm>

namespace cudalab::harness {

double Ceilings::write_gbps() const {
  const double copy = copy_gbps();
  if (read_gbps <= 0 || copy <= 0) return copy;
  const double seconds_per_written_byte = 2.0 / copy - 1.0 / read_gbps;
  return seconds_per_written_byte > 0 ? 1.0 / seconds_per_written_byte : copy;
}

const char* to_string(ComputeUnit unit) {
  switch (unit) {
    case ComputeUnit::fp32_cuda_cores: return "fp32_cuda_cores";
    case ComputeUnit::fp64_cuda_cores: return "fp64_cuda_cores";
    case ComputeUnit::integer: return "integer";
    case ComputeUnit::tf32_tensor_cores: return "tf32_tensor_cores";
    case ComputeUnit::bf16_tensor_cores: return "bf16_tensor_cores";
    case ComputeUnit::fp16_tensor_cores: return "fp16_tensor_cores";
    case ComputeUnit::fp8_tensor_cores: return "fp8_tensor_cores";
  }
  return "unknown";
}

double compute_ceiling_tflops(const Ceilings& ceilings, ComputeUnit unit) {
  switch (unit) {
    case ComputeUnit::fp32_cuda_cores: return ceilings.fp32_tflops;
    case ComputeUnit::tf32_tensor_cores: return ceilings.tf32_tensor_tflops;
    case ComputeUnit::bf16_tensor_cores: return ceilings.bf16_tensor_tflops;
    case ComputeUnit::fp16_tensor_cores: return ceilings.fp16_tensor_tflops;
    case ComputeUnit::fp8_tensor_cores: return ceilings.fp8_tensor_tflops;
    case ComputeUnit::fp64_cuda_cores:
    case ComputeUnit::integer: return 0;
  }
  return 0;
}

RooflinePoint roofline(const Ceilings& ceilings, const Work& work, ComputeUnit unit, double seconds) {
  RooflinePoint p;
  const double bytes = work.bytes_read + work.bytes_written;
  const double read_rate = ceilings.read_gbps > 0 ? ceilings.read_gbps : ceilings.copy_gbps();
  const double write_rate = ceilings.write_gbps();
  double memory_seconds = 0;
  if (read_rate > 0 && write_rate > 0)
    memory_seconds = work.bytes_read / (read_rate * 1e9) + work.bytes_written / (write_rate * 1e9);
  p.memory_ceiling_gbps = memory_seconds > 0 ? bytes / memory_seconds / 1e9 : 0;
  p.compute_ceiling_tflops = compute_ceiling_tflops(ceilings, unit);
  if (seconds > 0) {
    p.gbps = bytes / seconds / 1e9;
    p.tflops = work.flops / seconds / 1e12;
  }
  const double compute_seconds = p.compute_ceiling_tflops > 0 ? work.flops / (p.compute_ceiling_tflops * 1e12) : 0;
  p.floor_seconds = std::max(memory_seconds, compute_seconds);
  p.bound = compute_seconds > memory_seconds ? "compute" : "memory";
  p.fraction = seconds > 0 ? p.floor_seconds / seconds : 0;
  return p;
}

}  // namespace cudalab::harness
