#include "core/clock.h"

#include <chrono>
#include <ctime>

namespace kforge {
namespace {

class SystemClock : public Clock {
 public:
  double NowSeconds() const override {
    auto now = std::chrono::steady_clock::now().time_since_epoch();
    return std::chrono::duration<double>(now).count();
  }
  std::string NowIso8601() const override {
    std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
  }
};

}  // namespace

const Clock& RealClock() {
  static const SystemClock clock;
  return clock;
}

}  // namespace kforge
