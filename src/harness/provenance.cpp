#include <unistd.h>

#include <ctime>

#include "harness/nvml.hpp"
#include "harness/results.hpp"

namespace cudalab {
// Generated at build time by cmake/WriteGitRevision.cmake.
const char* git_commit();
bool git_dirty();
}  // namespace cudalab

namespace cudalab::harness {

std::string version_line() {
  return std::string("cudalab ") + CUDALAB_VERSION + ", commit " + git_commit() +
         (git_dirty() ? " with uncommitted changes" : "");
}

Provenance collect_provenance(const DeviceInfo& device, const std::string& command_line) {
  Provenance p;
  p.cudalab_version = CUDALAB_VERSION;
  p.commit = git_commit();
  p.dirty = git_dirty();
  p.gpu_name = device.name;
  p.gpu_uuid = device.uuid;
  p.compute_capability = device.compute_capability();
  p.sm_count = device.sm_count;
  p.memory_gib = static_cast<double>(device.global_memory_bytes) / (1024.0 * 1024.0 * 1024.0);
  p.driver_cuda_version = device.driver_cuda_version;
  p.runtime_cuda_version = device.runtime_cuda_version;
  p.max_sm_clock_mhz = device.sm_clock_khz / 1000;
  const NvmlSnapshot nvml = nvml_snapshot(device.pci_bus_id);
  p.driver_version = nvml.driver_version;
  p.sm_clock_mhz_start = nvml.sm_clock_mhz;
  p.memory_clock_mhz_start = nvml.memory_clock_mhz;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  p.date_utc = date;
  p.command_line = command_line;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) p.hostname = host;
  return p;
}

void record_end_clocks(Provenance& provenance, const DeviceInfo& device) {
  const NvmlSnapshot nvml = nvml_snapshot(device.pci_bus_id);
  provenance.sm_clock_mhz_end = nvml.sm_clock_mhz;
  provenance.memory_clock_mhz_end = nvml.memory_clock_mhz;
}

std::string resume_refusal(const Provenance& then, const Provenance& now) {
  if (then.commit != now.commit || then.dirty != now.dirty)
    return "another build wrote it (commit " + then.commit + (then.dirty ? " with uncommitted changes" : "") + ")";
  if (then.gpu_name != now.gpu_name || then.compute_capability != now.compute_capability ||
      then.sm_count != now.sm_count || then.memory_gib != now.memory_gib)
    return "it was measured on another model of GPU (" + then.gpu_name + ", " + std::to_string(then.sm_count) + " SMs)";
  return "";
}

}  // namespace cudalab::harness
