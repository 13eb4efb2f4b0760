// Time sources behind an interface so tests can drive time by hand.
#pragma once

#include <cstdint>
#include <string>

namespace kforge {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic seconds, for durations.
  virtual double NowSeconds() const = 0;
  // Wall-clock time as ISO-8601 UTC ("2026-11-30T02:37:06Z"), for records.
  virtual std::string NowIso8601() const = 0;
};

// The process's real clock. Thread-safe.
const Clock& RealClock();

// A clock that moves only when told to. Not thread-safe.
class FakeClock : public Clock {
 public:
  double NowSeconds() const override { return seconds_; }
  std::string NowIso8601() const override { return iso_; }
  void Advance(double seconds) { seconds_ += seconds; }
  void SetIso8601(std::string iso) { iso_ = std::move(iso); }

 private:
  double seconds_ = 0;
  std::string iso_ = "2026-01-01T00:00:00Z";
};

}  // namespace kforge
