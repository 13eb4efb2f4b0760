// A child process in its own process group, with stdin from /dev/null, an empty signal mask, its
// stdout and stderr captured into a bounded tail (or appended to a log file), and optionally a
// request/response pipe pair on fds 3 and 4. The destructor closes the channel, gives the child a
// second to end on its own, then kills the whole group and reaps it. Not thread-safe except
// OutputTail().
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace kforge {

struct SpawnOptions {
  std::vector<std::string> argv;          // argv[0] is looked up on the PATH given in `environment`
  std::vector<std::string> environment;   // "NAME=value": the child's whole environment
  std::filesystem::path working_dir;      // empty: inherit
  size_t output_limit_bytes = 64 * 1024;  // only the last bytes of stdout+stderr are kept
  bool with_channel = false;              // fd 3: requests to the child, fd 4: its responses
  // Non-empty: stdout and stderr are appended to this file instead of captured (OutputTail() is
  // then empty); the file is created when missing.
  std::filesystem::path output_file;
  std::vector<int> cpus;         // non-empty: the child and its descendants run on these CPU cores only
  bool die_with_parent = false;  // SIGKILL to the child when the thread that spawned it ends
};

// Where `name` runs from under `environment`'s PATH (a name with a slash is itself); NotFound
// when no executable of that name is on it.
Result<std::string> FindProgram(const std::string& name, const std::vector<std::string>& environment);

struct ExitStatus {
  bool exited = false;  // false: killed by a signal
  int code = 0;         // exit code, or the signal number
  std::string ToString() const;
};

class Subprocess {
 public:
  static Result<std::unique_ptr<Subprocess>> Spawn(const SpawnOptions& options);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  int request_fd() const { return request_fd_; }    // write end, or -1
  int response_fd() const { return response_fd_; }  // read end, or -1
  // The last output_limit_bytes of what the child wrote to stdout and stderr. Thread-safe.
  std::string OutputTail() const;
  // Waits until the child and its descendants have closed their output (so OutputTail() is
  // complete); false when that takes longer than `timeout_s`.
  bool WaitForOutputEnd(double timeout_s);
  // Whether the child is still running; reaps it when it has ended.
  bool IsRunning();
  // SIGKILL to the child's whole process group.
  void KillGroup();
  // Blocks until the child ends (EINTR-safe) and returns how it ended.
  ExitStatus Wait();

 private:
  Subprocess() = default;
  void CaptureOutput(int fd);

  pid_t pid_ = -1;
  int request_fd_ = -1;
  int response_fd_ = -1;
  bool reaped_ = false;
  ExitStatus exit_status_;
  size_t output_limit_ = 0;
  std::thread output_thread_;
  mutable std::mutex output_mutex_;
  std::string output_tail_;  // guarded by output_mutex_
  bool output_ended_ = false;  // guarded by output_mutex_
  std::condition_variable output_done_;
};

}  // namespace kforge
