// Who runs which task of one `kforge bench --gpus` run. Several worker processes go through the
// same task list and each task goes to the first that claims it: a claim is a file created with
// O_CREAT|O_EXCL in the run's own folder, OUT/.claims/<scope>/<run id>/, so claims left by an
// earlier run (interrupted) are never honoured by a later one, and it is marked done once the
// task's report is written. Safe across processes of one host; thread-compatible.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace kforge {

// OUT/.claims/all, or OUT/.claims/shard-I-of-N for a run of one shard.
std::filesystem::path ClaimsScope(const std::filesystem::path& out, int shard_index, int shard_count);

// A run id no earlier run had: the start time and the process id ("20261204T185548-12345").
std::string NewBenchRunId();

class TaskClaims {
 public:
  TaskClaims(std::filesystem::path scope, std::string run_id);

  const std::string& run_id() const { return run_id_; }
  const std::filesystem::path& folder() const { return folder_; }  // scope/run_id

  // True when this caller now owns `task`; false when another worker of the run claimed it first.
  // IoError when the claim cannot be written (then nobody runs it in this run).
  Result<bool> Claim(const std::string& task);
  // The task's report is written.
  Status MarkDone(const std::string& task);

  struct Snapshot {
    std::vector<std::string> claimed;  // every task claimed in this run, done ones included, sorted
    std::vector<std::string> done;     // sorted
  };
  Snapshot Scan() const;

 private:
  std::filesystem::path folder_;
  std::string run_id_;
};

// Held by the process that deals a run's tasks (the `bench --gpus` parent) for as long as the run
// lasts, so that two such runs never share a scope. The lock ends with its process, however it
// ends: an interrupted run does not block the next.
class ClaimsLock {
 public:
  // Takes the scope's lock and removes the claim folders of every other run (an interrupted one's);
  // InvalidArgument when another live process holds it.
  static Result<std::unique_ptr<ClaimsLock>> Acquire(const std::filesystem::path& scope, const std::string& run_id);
  ~ClaimsLock();
  ClaimsLock(const ClaimsLock&) = delete;
  ClaimsLock& operator=(const ClaimsLock&) = delete;

 private:
  explicit ClaimsLock(int fd) : fd_(fd) {}
  int fd_;
};

// A task name as a file name ('/' and '%' escaped) and back.
std::string ClaimFileStem(const std::string& task);
std::string TaskOfClaimFileStem(const std::string& stem);

}  // namespace kforge
