// The interface the evaluator uses to talk to a worker, so tests can substitute a fake.
#pragma once

#include <string>

#include "core/json.h"
#include "core/status.h"

namespace kforge {

class WorkerClient {
 public:
  virtual ~WorkerClient() = default;
  // Sends {"op": op, ...fields} and returns the reply's result. Errors: InvalidArgument for a
  // user error the worker reported (its message is for the user), Timeout, Unavailable when the
  // worker died (its output tail is in the message), Internal for a worker-side bug.
  virtual Result<Json> Call(const std::string& op, const Json& fields, double timeout_s) = 0;
};

// The workers of one device, as an evaluation needs them: the trusted worker and the zygote.
class WorkerSource {
 public:
  virtual ~WorkerSource() = default;
  virtual Result<WorkerClient*> Trusted() = 0;
  virtual Result<WorkerClient*> Zygote() = 0;
};

}  // namespace kforge
