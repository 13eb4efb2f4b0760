#include "llm/sleeper.h"

#include <chrono>
#include <thread>

namespace kforge {
namespace {

class RealSleeper : public Sleeper {
 public:
  void Sleep(double seconds) override {
    if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
};

}  // namespace

std::shared_ptr<Sleeper> MakeRealSleeper() { return std::make_shared<RealSleeper>(); }

}  // namespace kforge
