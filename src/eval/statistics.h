// Robust summaries of timing samples: median with a bootstrap confidence interval, and a
// speedup whose interval decides whether it is real or inside the noise.
#pragma once

#include <cstdint>
#include <vector>

namespace kforge {

struct SampleSummary {
  int count = 0;
  double median = 0;
  double ci_low = 0;   // 95% bootstrap interval of the median
  double ci_high = 0;
  double min = 0;
  double max = 0;
  double relative_spread() const { return median > 0 ? (ci_high - ci_low) / median : 0; }
};

double Median(std::vector<double> values);
// Deterministic for a given seed.
SampleSummary Summarize(const std::vector<double>& samples, uint64_t seed = 1);

struct SpeedupEstimate {
  double speedup = 0;  // reference median / candidate median
  double ci_low = 0;
  double ci_high = 0;
  // True when the whole 95% interval lies above 1 (faster) or below 1 (slower).
  bool significant = false;
};

SpeedupEstimate EstimateSpeedup(const std::vector<double>& reference, const std::vector<double>& candidate,
                                uint64_t seed = 1);

}  // namespace kforge
