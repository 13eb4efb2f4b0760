// Randomness for jitter, behind an interface so that tests can script it and a seed can make a
// run's delays reproducible.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <random>

namespace kforge {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // A number in [0, 1). Thread-safe.
  virtual double Uniform01() = 0;
};

// A Mersenne Twister seeded once; the same seed gives the same sequence on every platform.
class SeededRandom : public RandomSource {
 public:
  explicit SeededRandom(uint64_t seed) : engine_(seed) {}
  double Uniform01() override;

 private:
  std::mutex mutex_;
  std::mt19937_64 engine_;  // guarded by mutex_
};

// Seeded from std::random_device, for real runs.
std::shared_ptr<RandomSource> MakeRandomSource();

}  // namespace kforge
