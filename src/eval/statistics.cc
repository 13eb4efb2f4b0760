#include "eval/statistics.h"

#include <algorithm>
#include <random>

namespace kforge {
namespace {

constexpr int kResamples = 1000;

double ResampledMedian(const std::vector<double>& values, std::mt19937_64& rng, std::vector<double>& scratch) {
  std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
  scratch.resize(values.size());
  for (double& slot : scratch) slot = values[pick(rng)];
  return Median(scratch);
}

double Percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(fraction * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

}  // namespace

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  double upper = values[middle];
  if (values.size() % 2) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + middle);
  return (lower + upper) / 2;
}

SampleSummary Summarize(const std::vector<double>& samples, uint64_t seed) {
  SampleSummary summary;
  if (samples.empty()) return summary;
  summary.count = static_cast<int>(samples.size());
  summary.median = Median(samples);
  auto [low, high] = std::minmax_element(samples.begin(), samples.end());
  summary.min = *low;
  summary.max = *high;
  std::mt19937_64 rng(seed);
  std::vector<double> medians, scratch;
  medians.reserve(kResamples);
  for (int i = 0; i < kResamples; ++i) medians.push_back(ResampledMedian(samples, rng, scratch));
  summary.ci_low = Percentile(medians, 0.025);
  summary.ci_high = Percentile(medians, 0.975);
  return summary;
}

SpeedupEstimate EstimateSpeedup(const std::vector<double>& reference, const std::vector<double>& candidate,
                                uint64_t seed) {
  SpeedupEstimate estimate;
  if (reference.empty() || candidate.empty()) return estimate;
  double candidate_median = Median(candidate);
  if (candidate_median <= 0) return estimate;
  estimate.speedup = Median(reference) / candidate_median;
  std::mt19937_64 rng(seed);
  std::vector<double> ratios, scratch;
  ratios.reserve(kResamples);
  for (int i = 0; i < kResamples; ++i) {
    double ref = ResampledMedian(reference, rng, scratch);
    double cand = ResampledMedian(candidate, rng, scratch);
    if (cand > 0) ratios.push_back(ref / cand);
  }
  if (ratios.empty()) return estimate;
  estimate.ci_low = Percentile(ratios, 0.025);
  estimate.ci_high = Percentile(ratios, 0.975);
  estimate.significant = estimate.ci_low > 1.0 || estimate.ci_high < 1.0;
  return estimate;
}

}  // namespace kforge
