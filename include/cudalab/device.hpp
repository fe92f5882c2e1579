// What the library needs to know about a GPU, read once from the runtime.
#pragma once

#include <cstddef>
#include <string>

namespace cudalab {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::string uuid;  // "GPU-xxxxxxxx-...", stable across runs: keys the probe cache
  std::string pci_bus_id;
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  std::size_t global_memory_bytes = 0;
  std::size_t l2_cache_bytes = 0;
  int memory_clock_khz = 0;  // peak, as the driver reports it
  int memory_bus_width_bits = 0;
  int sm_clock_khz = 0;  // peak SM clock
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  std::size_t shared_memory_per_block_optin = 0;
  int driver_cuda_version = 0;  // e.g. 13000 for 13.0
  int runtime_cuda_version = 0;
  bool ecc_enabled = false;

  int compute_capability() const { return compute_major * 10 + compute_minor; }
};

// Number of CUDA devices; 0 when there is no device or no usable driver (never throws).
int device_count() noexcept;

// Why there is no usable device, in words ("" when there is one).
std::string no_device_reason();

// Throws Error{no_device} with no_device_reason() when device_count() == 0.
void require_device();

// Lets GPU `from`'s kernels address GPU `to`'s memory (peer access over unified virtual
// addressing); false where the pair cannot. Each pair is enabled once in a process (asking again
// is an error the runtime reports, and compute-sanitizer with it); access that another library
// enabled first is taken as it is. The current device is left as it was.
bool enable_peer_access(int from, int to);

// Reads the attributes of `ordinal` (or the current device when ordinal < 0).
DeviceInfo device_info(int ordinal = -1);

// Throws Error{unsupported_device} when this build holds no code the current GPU can run,
// naming the architectures built and the one found, and how to rebuild.
void require_kernel_image();

// Architectures this build was compiled for, as CMake was told, comma-separated ("90", "80,90", ...).
const char* built_architectures() noexcept;

}  // namespace cudalab
