// A Python worker process (python -m kforge_worker --role R --device D) answering requests one
// at a time over the fd 3/4 channel. A timeout or a broken pipe kills the worker: the next call
// returns Unavailable until the owner starts a new one. Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sandbox/message_channel.h"
#include "sandbox/subprocess.h"
#include "sandbox/worker_client.h"

namespace kforge {

struct WorkerSpec {
  std::string python;                    // interpreter with torch and triton
  std::string python_path;               // folder holding the kforge_worker package
  std::string role;                      // "trusted" or "zygote"
  std::string device;                    // "cpu" or "cuda:N"
  std::vector<std::string> environment;  // the worker's whole environment ("NAME=value")
  double start_timeout_s = 120;
};

class Worker : public WorkerClient {
 public:
  // Starts the process and waits for its answer to "hello" (the warm imports happen first).
  static Result<std::unique_ptr<Worker>> Start(const WorkerSpec& spec);

  Result<Json> Call(const std::string& op, const Json& fields, double timeout_s) override;
  bool alive() const { return alive_; }
  // Alive and its process still running (a worker can die between calls, e.g. to the OOM killer).
  bool Running() { return alive_ && process_->IsRunning(); }
  const Json& hello() const { return hello_; }
  std::string OutputTail() const { return process_->OutputTail(); }

 private:
  explicit Worker(std::unique_ptr<Subprocess> process);
  Status Fail(const Status& status);

  std::unique_ptr<Subprocess> process_;
  MessageChannel channel_;
  bool alive_ = true;
  int next_id_ = 1;
  Json hello_;
};

}  // namespace kforge
