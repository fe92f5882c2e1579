// `cudalab probe`: measures this GPU's ceilings (the roofline every % in cudalab refers to) and
// caches them per GPU, so `run` and `bench` need not measure them again.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "cudalab/device.hpp"
#include "harness/roofline.hpp"

namespace cudalab::probe {

// The measurements measure_ceilings announces to `progress`: 5, and 6 on a host of several GPUs.
int measurement_count();

// Measures every ceiling; `progress` hears one line per measurement. Takes ~10-20 s.
harness::Ceilings measure_ceilings(const DeviceInfo& device, const std::function<void(const std::string&)>& progress);

// Where the ceilings of `device` are cached: $CUDALAB_CACHE_DIR, else $XDG_CACHE_HOME/cudalab,
// else ~/.cache/cudalab; file probe-<uuid>.json.
std::string cache_path(const DeviceInfo& device);
std::optional<harness::Ceilings> load_cached(const DeviceInfo& device);
void save_cache(const DeviceInfo& device, const harness::Ceilings& ceilings);

// The cached ceilings, or freshly measured (and cached) ones when there are none or `refresh`.
harness::Ceilings ceilings_for(const DeviceInfo& device, bool refresh,
                               const std::function<void(const std::string&)>& progress);

}  // namespace cudalab::probe
