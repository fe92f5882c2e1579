#include "core/launch_attributes.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include <cuda_runtime_api.h>

#include "cudalab/error.hpp"

namespace cudalab {
namespace {

constexpr int kCachedDevices = 64;  // ordinals beyond are asked every time

int current_device() {
  int device = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

}  // namespace

CurrentGpu current_gpu() {
  // Packed as sm_count << 16 | compute capability, 0 while unknown: a device's never change.
  static std::atomic<std::uint32_t> known[kCachedDevices] = {};
  const int device = current_device();
  const bool cached = device < kCachedDevices;
  if (cached) {
    const std::uint32_t packed = known[device].load(std::memory_order_relaxed);
    if (packed != 0) return {static_cast<int>(packed & 0xffff), static_cast<int>(packed >> 16)};
  }
  int major = 0, minor = 0;
  CurrentGpu gpu;
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&gpu.sm_count, cudaDevAttrMultiProcessorCount, device));
  gpu.compute_capability = major * 10 + minor;
  if (cached)
    known[device].store(
        static_cast<std::uint32_t>(gpu.sm_count) << 16 | static_cast<std::uint32_t>(gpu.compute_capability),
        std::memory_order_relaxed);
  return gpu;
}

std::size_t shared_memory_optin() {
  int bytes = 0;
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, current_device()));
  return static_cast<std::size_t>(bytes);
}

void set_dynamic_shared_memory(const void* kernel, std::size_t bytes, bool max_shared_carveout) {
  struct Set {
    std::size_t bytes = 0;
    bool carveout = false;
  };
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, Set> known;
  // Held across the runtime's calls: two threads setting one kernel's limit must leave the larger.
  const std::lock_guard<std::mutex> lock(mutex);
  Set& set = known[{kernel, current_device()}];
  if (set.bytes >= bytes && (set.carveout || !max_shared_carveout)) return;
  const std::size_t limit = bytes > set.bytes ? bytes : set.bytes;
  CUDALAB_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(limit)));
  if (max_shared_carveout)
    CUDALAB_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  set.bytes = limit;
  set.carveout = set.carveout || max_shared_carveout;
}

int resident_blocks_per_sm(const void* kernel, int threads, std::size_t dynamic_shared) {
  if (dynamic_shared > 0) set_dynamic_shared_memory(kernel, dynamic_shared);
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int, std::size_t>, int> known;
  const std::tuple<const void*, int, int, std::size_t> key{kernel, current_device(), threads, dynamic_shared};
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = known.find(key);
  if (found != known.end()) return found->second;
  int blocks = 0;
  CUDALAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, dynamic_shared));
  return known[key] = blocks > 0 ? blocks : 1;
}

}  // namespace cudalab
