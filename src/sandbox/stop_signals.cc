#include "sandbox/stop_signals.h"

#include <pthread.h>

#include <cmath>
#include <ctime>

namespace kforge {

BlockedStopSignals::BlockedStopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
}

BlockedStopSignals::~BlockedStopSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

int BlockedStopSignals::Wait(double timeout_s) {
  timespec timeout{static_cast<time_t>(timeout_s), static_cast<long>(std::fmod(timeout_s, 1.0) * 1e9)};
  siginfo_t info;
  const int signal = sigtimedwait(&signals_, &info, &timeout);
  return signal > 0 ? signal : 0;
}

int BlockedStopSignals::Wait() {
  int signal = 0;
  sigwait(&signals_, &signal);
  return signal;
}

}  // namespace kforge
