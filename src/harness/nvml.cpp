#include "harness/nvml.hpp"

#include <dlfcn.h>

namespace cudalab::harness {
namespace {

using nvmlDevice = void*;
using InitFn = int (*)();
using DriverVersionFn = int (*)(char*, unsigned);
using HandleByBusIdFn = int (*)(const char*, nvmlDevice*);
using ClockFn = int (*)(nvmlDevice, int, unsigned*);
using LinkFn = int (*)(nvmlDevice, unsigned*);
using P2PStatusFn = int (*)(nvmlDevice, nvmlDevice, int, int*);
constexpr int kSuccess = 0;
constexpr int kP2PCapsNvlink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK
constexpr int kP2PStatusOk = 0;    // NVML_P2P_STATUS_OK
constexpr int kClockSm = 1;
constexpr int kClockMemory = 2;

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

// libnvidia-ml, loaded once and kept (NVML is cheap to keep and unloading it races with its own
// threads), initialised; null where it cannot be loaded or initialised.
void* nvml_library() {
  static void* const library = [] {
    void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return handle;
    auto init = symbol<InitFn>(handle, "nvmlInit_v2");
    return init != nullptr && init() == kSuccess ? handle : nullptr;
  }();
  return library;
}

}  // namespace

NvmlSnapshot nvml_snapshot(const std::string& pci_bus_id) {
  NvmlSnapshot s;
  void* library = nvml_library();
  if (library == nullptr) return s;
  auto driver_version = symbol<DriverVersionFn>(library, "nvmlSystemGetDriverVersion");
  auto handle_by_bus_id = symbol<HandleByBusIdFn>(library, "nvmlDeviceGetHandleByPciBusId_v2");
  auto clock = symbol<ClockFn>(library, "nvmlDeviceGetClockInfo");
  auto max_generation = symbol<LinkFn>(library, "nvmlDeviceGetMaxPcieLinkGeneration");
  auto max_width = symbol<LinkFn>(library, "nvmlDeviceGetMaxPcieLinkWidth");
  auto current_generation = symbol<LinkFn>(library, "nvmlDeviceGetCurrPcieLinkGeneration");
  auto current_width = symbol<LinkFn>(library, "nvmlDeviceGetCurrPcieLinkWidth");
  if (!driver_version || !handle_by_bus_id || !clock || !max_generation || !max_width || !current_generation ||
      !current_width)
    return s;
  char version[96] = {};
  if (driver_version(version, sizeof version) == kSuccess) s.driver_version = version;
  nvmlDevice device = nullptr;
  if (handle_by_bus_id(pci_bus_id.c_str(), &device) != kSuccess) return s;
  s.available = true;
  clock(device, kClockSm, &s.sm_clock_mhz);
  clock(device, kClockMemory, &s.memory_clock_mhz);
  max_generation(device, &s.pcie_max_generation);
  max_width(device, &s.pcie_max_width);
  current_generation(device, &s.pcie_current_generation);
  current_width(device, &s.pcie_current_width);
  return s;
}

std::string nvml_p2p_link(const std::string& pci_bus_id_a, const std::string& pci_bus_id_b) {
  void* library = nvml_library();
  if (library == nullptr) return "";
  auto handle_by_bus_id = symbol<HandleByBusIdFn>(library, "nvmlDeviceGetHandleByPciBusId_v2");
  auto p2p_status = symbol<P2PStatusFn>(library, "nvmlDeviceGetP2PStatus");
  nvmlDevice a = nullptr, b = nullptr;
  int status = 0;
  if (!handle_by_bus_id || !p2p_status || handle_by_bus_id(pci_bus_id_a.c_str(), &a) != kSuccess ||
      handle_by_bus_id(pci_bus_id_b.c_str(), &b) != kSuccess || p2p_status(a, b, kP2PCapsNvlink, &status) != kSuccess)
    return "";
  return status == kP2PStatusOk ? "NVLink" : "no NVLink";
}

double pcie_bytes_per_second(unsigned generation, unsigned width) {
  // Transfer rate per lane (GT/s) and line-coding efficiency per generation; PCIe 6 uses FLIT
  // mode, counted here at its raw rate.
  double gts = 0, efficiency = 0;
  switch (generation) {
    case 1:
      gts = 2.5;
      efficiency = 8.0 / 10.0;
      break;
    case 2:
      gts = 5.0;
      efficiency = 8.0 / 10.0;
      break;
    case 3:
      gts = 8.0;
      efficiency = 128.0 / 130.0;
      break;
    case 4:
      gts = 16.0;
      efficiency = 128.0 / 130.0;
      break;
    case 5:
      gts = 32.0;
      efficiency = 128.0 / 130.0;
      break;
    case 6:
      gts = 64.0;
      efficiency = 1.0;
      break;
    default: return 0;
  }
  return gts * 1e9 * efficiency * width / 8.0;
}

}  // namespace cudalab::harness
