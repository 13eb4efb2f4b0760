// `kforge worker --connect URL`: a worker of the evaluation service that runs on another machine
// (a GPU node, placed there by hand or by Slurm). Each of its slots (one per GPU) asks the
// service for the next job, judges it locally with a ServiceJudge, and sends back the evaluation
// with this machine's environment fingerprint; the service stores it. A lost connection is
// retried with a growing pause; a refused token ends the worker.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "serve/service_judge.h"

namespace kforge {

struct RemoteWorkerOptions {
  std::string url;     // http://host:port of `kforge serve --eval`
  std::string token;   // a worker's bearer token ("" on an open localhost service)
  std::string name;    // how the service names this worker (its host, by default)
  std::filesystem::path task_folder;  // where the jobs' tasks are written
  Json fingerprint;    // this machine's environment, stored with each evaluation
  double wait_s = 20;  // how long one request for a job waits
  double max_pause_s = 30;  // the longest pause between attempts to reach the service
};

class RemoteWorker {
 public:
  RemoteWorker(RemoteWorkerOptions options, std::vector<ServiceJudge*> judges);

  // Serves until `stop` is set (each slot finishes its job first) or the service refuses the
  // token (PermissionDenied-like InvalidArgument). Returns how many jobs were judged.
  Result<int64_t> Run(const std::atomic<bool>& stop);

 private:
  Status Serve(size_t slot, const std::atomic<bool>& stop, std::atomic<int64_t>& judged);

  RemoteWorkerOptions options_;
  std::vector<ServiceJudge*> judges_;
};

}  // namespace kforge
