#include "llm/random_source.h"

namespace kforge {

double SeededRandom::Uniform01() {
  std::lock_guard<std::mutex> lock(mutex_);
  // The top 53 bits as a fraction: exact and portable, unlike std::uniform_real_distribution.
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

std::shared_ptr<RandomSource> MakeRandomSource() {
  std::random_device device;
  uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device();
  return std::make_shared<SeededRandom>(seed);
}

}  // namespace kforge
