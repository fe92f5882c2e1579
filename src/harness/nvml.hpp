// The few NVML facts cudalab records (driver version, current clocks, PCIe link, the link between
// two GPUs), read through dlopen so the binaries still start on machines without the driver's
// libnvidia-ml.
#pragma once

#include <string>

namespace cudalab::harness {

struct NvmlSnapshot {
  bool available = false;         // false when libnvidia-ml could not be loaded or queried
  std::string driver_version;     // "580.159.04"
  unsigned sm_clock_mhz = 0;      // current
  unsigned memory_clock_mhz = 0;  // current
  unsigned pcie_max_generation = 0;
  unsigned pcie_max_width = 0;
  unsigned pcie_current_generation = 0;
  unsigned pcie_current_width = 0;
};

// Reads the device with this PCI bus id ("0000:3B:00.0", as cudaDeviceGetPCIBusId gives).
NvmlSnapshot nvml_snapshot(const std::string& pci_bus_id);

// How the GPUs with these PCI bus ids reach each other: "NVLink" where NVML reports NVLink
// peer-to-peer between them, "no NVLink" where it reports none, "" where NVML cannot say.
std::string nvml_p2p_link(const std::string& pci_bus_id_a, const std::string& pci_bus_id_b);

// Bytes per second of one direction of a PCIe link (after line coding); 0 when unknown.
double pcie_bytes_per_second(unsigned generation, unsigned width);

}  // namespace cudalab::harness
