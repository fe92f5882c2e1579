// What the experiments share: a short timing budget for sweeps of many points (each experiment
// stays well under 20 s), the effective-bandwidth arithmetic, and the failure every data check
// raises.
#pragma once

#include <string>

#include "cudalab/error.hpp"
#include "harness/timer.hpp"

namespace cudalab::harness {

// Timing for sweeps of many points: cold (L2 flushed) unless the point is about the cache.
inline TimingOptions sweep_timing(bool cold = true) {
  TimingOptions options;
  options.cold = cold;
  options.stopping.min_samples = 5;
  options.stopping.max_samples = 50;
  options.stopping.budget_seconds = 0.15;
  return options;
}

// GB/s (1e9 bytes per second) for `bytes` moved in `milliseconds`.
inline double gbps(double bytes, double milliseconds) { return bytes / (milliseconds * 1e-3) / 1e9; }

[[noreturn]] inline void data_check_failed(const std::string& experiment, const std::string& what) {
  throw Error(ErrorKind::cuda, experiment + ": wrong data: " + what, __FILE__, __LINE__);
}

}  // namespace cudalab::harness
