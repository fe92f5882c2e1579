// What a library call asks the runtime before each launch, asked once: the current device's compute
// capability and SM count, and a kernel's dynamic shared memory limit and carveout. A model calls
// the library hundreds of times a step, and these queries were a measurable share of its host time
// (on an H200 host, 1500 attribute reads and 265 attribute writes a GPT training step).
#pragma once

#include <cstddef>

namespace cudalab {

// The current device's compute capability (major * 10 + minor) and SM count: what a library call
// picks its kernel and grid by. Read once per device.
struct CurrentGpu {
  int compute_capability = 0;
  int sm_count = 0;
};
CurrentGpu current_gpu();
// The most shared memory a block on the current device may ask for (cudaDevAttrMaxSharedMemoryPerBlockOptin).
std::size_t shared_memory_optin();

// Lets `kernel` (a __global__ function's address) launch with `bytes` of dynamic shared memory on
// the current device and, with `max_shared_carveout`, prefers the SM's carveout at maximum shared
// memory. The runtime is asked only when this kernel, on this device, has not had as much before.
void set_dynamic_shared_memory(const void* kernel, std::size_t bytes, bool max_shared_carveout = false);

// Blocks of `kernel` (a __global__ function's address) with `threads` threads and `dynamic_shared`
// bytes of dynamic shared memory that one SM of the current device holds at once (at least 1), its
// dynamic shared memory limit raised to that first. The occupancy query is asked once per kernel,
// shape and device: decode attention sizes its grid by it on every call.
int resident_blocks_per_sm(const void* kernel, int threads, std::size_t dynamic_shared);

}  // namespace cudalab
