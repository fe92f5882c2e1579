// Sample statistics and the noise-based stopping rule used by the timer.
#pragma once

#include <vector>

namespace cudalab::harness {

struct Summary {
  int count = 0;
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
  double mean = 0.0;
  double stdrel = 0.0;  // sample standard deviation over the mean
};

// Summary of `samples` (any order); all zeros for an empty vector.
Summary summarize(std::vector<double> samples);

struct StoppingRule {
  int min_samples = 10;
  int max_samples = 1000;
  double target_stdrel = 0.01;  // stop once the relative spread is below this...
  double budget_seconds = 1.0;  // ...or once this much time has been spent sampling
};

// True when sampling should end: max_samples reached, or min_samples reached and either the
// spread is below target or the time budget is spent.
bool should_stop(const std::vector<double>& samples, double elapsed_seconds, const StoppingRule& rule);

}  // namespace cudalab::harness
