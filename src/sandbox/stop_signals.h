// SIGINT and SIGTERM taken as events rather than as the end of the process: blocked in the
// calling thread for the scope's life (threads started meanwhile inherit the block), then waited
// for, so that a command stops its workers, servers and jobs before it exits.
#pragma once

#include <signal.h>

namespace kforge {

class BlockedStopSignals {
 public:
  BlockedStopSignals();
  ~BlockedStopSignals();  // restores the thread's earlier signal mask
  BlockedStopSignals(const BlockedStopSignals&) = delete;
  BlockedStopSignals& operator=(const BlockedStopSignals&) = delete;

  // The stop signal that arrived within `timeout_s`, or 0.
  int Wait(double timeout_s);
  // Blocks until a stop signal arrives and returns it.
  int Wait();

 private:
  sigset_t signals_;
  sigset_t previous_;
};

}  // namespace kforge
