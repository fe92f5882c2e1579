// Kernel timing with CUDA events: warm-up launches first, then one launch per sample, each after
// an L2 flush ("cold") unless the experiment is about the cache, until the stopping rule is met.
#pragma once

#include <cstdint>
#include <functional>

#include <cuda_runtime_api.h>

#include "cudalab/device.hpp"
#include "cudalab/memory.hpp"
#include "harness/statistics.hpp"

namespace cudalab::harness {

// The bytes a flush reads on `device`: twice its L2 and 8 MiB more, so no line of the timed
// kernel's data survives it.
std::int64_t l2_flush_bytes(const DeviceInfo& device);

struct TimingOptions {
  int warmup_launches = 3;
  bool cold = true;  // flush L2 before each sample
  StoppingRule stopping;
};

class KernelTimer {
 public:
  // Allocates a flush buffer of twice the L2 size of the current device.
  KernelTimer();
  // Milliseconds per launch of `launch(stream)`; `prepare(stream)`, when given, runs before each
  // launch outside the timed interval. Launch errors surface as cudalab::Error.
  Summary time(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream, const TimingOptions& options,
               const std::function<void(cudaStream_t)>& prepare = nullptr);
  // Evicts the L2 by reading a buffer twice its size. Reads leave clean lines behind, so the
  // timed kernel pays no write-back of the flush's data (a memset flush would leave dirty lines).
  void flush_l2(cudaStream_t stream);

 private:
  DeviceBuffer<float4> flush_buffer_;
  DeviceBuffer<float> flush_sink_;
};

}  // namespace cudalab::harness
