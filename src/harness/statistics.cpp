#include "harness/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cudalab::harness {

Summary summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  s.count = static_cast<int>(n);
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  if (n > 1 && s.mean != 0.0) {
    double squares = 0.0;
    for (double x : samples) squares += (x - s.mean) * (x - s.mean);
    s.stdrel = std::sqrt(squares / static_cast<double>(n - 1)) / std::fabs(s.mean);
  }
  return s;
}

bool should_stop(const std::vector<double>& samples, double elapsed_seconds, const StoppingRule& rule) {
  const int count = static_cast<int>(samples.size());
  if (count >= rule.max_samples) return true;
  if (count < rule.min_samples) return false;
  if (elapsed_seconds >= rule.budget_seconds) return true;
  return summarize(samples).stdrel < rule.target_stdrel;
}

}  // namespace cudalab::harness
