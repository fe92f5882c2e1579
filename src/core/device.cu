#include "cudalab/device.hpp"

#include <cstdio>
#include <mutex>
#include <set>
#include <utility>

#include <cuda_runtime.h>

#include "cudalab/error.hpp"

#ifndef CUDALAB_BUILT_ARCHITECTURES
#define CUDALAB_BUILT_ARCHITECTURES "unknown"
#endif

namespace cudalab {
namespace {

// A kernel that exists only so require_kernel_image() can ask whether any image fits the GPU.
__global__ void architecture_probe_kernel() {}

int attribute(cudaDeviceAttr which, int ordinal) {
  int value = 0;
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&value, which, ordinal));
  return value;
}

std::string format_uuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

}  // namespace

const char* built_architectures() noexcept { return CUDALAB_BUILT_ARCHITECTURES; }

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (status == cudaSuccess && count > 0) return "";
  if (status == cudaSuccess) return "the CUDA runtime reports no devices";
  return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
}

void require_device() {
  if (device_count() > 0) return;
  throw Error(ErrorKind::no_device,
              "no CUDA device found: " + no_device_reason() +
                  ". cudalab measures kernels on an NVIDIA GPU; run it on a machine with one and "
                  "a driver that supports CUDA 13.",
              __FILE__, __LINE__);
}

DeviceInfo device_info(int ordinal) {
  require_device();
  if (ordinal < 0) CUDALAB_CUDA_CHECK(cudaGetDevice(&ordinal));
  cudaDeviceProp properties{};
  CUDALAB_CUDA_CHECK(cudaGetDeviceProperties(&properties, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = properties.name;
  info.uuid = format_uuid(properties.uuid);
  char bus_id[32] = {};
  CUDALAB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal));
  info.pci_bus_id = bus_id;
  info.compute_major = properties.major;
  info.compute_minor = properties.minor;
  info.sm_count = properties.multiProcessorCount;
  info.global_memory_bytes = properties.totalGlobalMem;
  info.l2_cache_bytes = static_cast<std::size_t>(properties.l2CacheSize);
  info.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, ordinal);
  info.memory_bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, ordinal);
  info.sm_clock_khz = attribute(cudaDevAttrClockRate, ordinal);
  info.max_threads_per_sm = properties.maxThreadsPerMultiProcessor;
  info.max_threads_per_block = properties.maxThreadsPerBlock;
  info.shared_memory_per_block_optin = properties.sharedMemPerBlockOptin;
  info.ecc_enabled = properties.ECCEnabled != 0;
  CUDALAB_CUDA_CHECK(cudaDriverGetVersion(&info.driver_cuda_version));
  CUDALAB_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_cuda_version));
  return info;
}

void require_kernel_image() {
  require_device();
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, architecture_probe_kernel);
  if (status == cudaSuccess) return;
  // Only a missing image is the build's architectures; anything else (a context already broken by
  // an earlier fault) is reported as itself, never as a GPU the build does not cover.
  if (status != cudaErrorNoKernelImageForDevice && status != cudaErrorInvalidDeviceFunction) CUDALAB_CUDA_CHECK(status);
  cudaGetLastError();
  const DeviceInfo info = device_info();
  throw Error(ErrorKind::unsupported_device,
              "this build holds GPU code for CUDA architectures " + std::string(built_architectures()) + " only; " +
                  info.name + " is sm_" + std::to_string(info.compute_capability()) +
                  ". Rebuild with CUDAARCHS=" + std::to_string(info.compute_capability()) +
                  " (docs/usage.md, 'Other GPUs'): " + cudaGetErrorString(status),
              __FILE__, __LINE__);
}

bool enable_peer_access(int from, int to) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> enabled;
  const std::lock_guard<std::mutex> lock(mutex);
  if (from == to || enabled.count({from, to}) != 0) return true;
  int can = 0;
  CUDALAB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
  if (can == 0) return false;
  int previous = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&previous));
  const cudaError_t selected = cudaSetDevice(from);
  const cudaError_t status = selected == cudaSuccess ? cudaDeviceEnablePeerAccess(to, 0) : selected;
  cudaGetLastError();  // the error is reported below (or, already enabled, is none): clear the last-error slot
  cudaSetDevice(previous);
  if (status != cudaErrorPeerAccessAlreadyEnabled) CUDALAB_CUDA_CHECK(status);
  enabled.insert({from, to});
  return true;
}

}  // namespace cudalab
