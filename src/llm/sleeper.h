// Waiting, behind an interface so that retry tests run instantly and assert exact delays.
#pragma once

#include <memory>

namespace kforge {

class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Blocks the calling thread for `seconds` (nothing for zero or less). Thread-safe.
  virtual void Sleep(double seconds) = 0;
};

// Sleeps for real.
std::shared_ptr<Sleeper> MakeRealSleeper();

}  // namespace kforge
