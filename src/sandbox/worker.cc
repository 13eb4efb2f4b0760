#include "sandbox/worker.h"

#include <utility>

namespace kforge {

Worker::Worker(std::unique_ptr<Subprocess> process)
    : process_(std::move(process)), channel_(process_->request_fd(), process_->response_fd()) {}

Result<std::unique_ptr<Worker>> Worker::Start(const WorkerSpec& spec) {
  SpawnOptions options;
  options.argv = {spec.python, "-m", "kforge_worker", "--role", spec.role, "--device", spec.device};
  options.environment = spec.environment;
  options.environment.push_back("PYTHONPATH=" + spec.python_path);
  options.environment.push_back("PYTHONUNBUFFERED=1");
  options.with_channel = true;
  ASSIGN_OR_RETURN(auto process, Subprocess::Spawn(options));
  std::unique_ptr<Worker> worker(new Worker(std::move(process)));
  auto hello = worker->Call("hello", Json::object(), spec.start_timeout_s);
  if (!hello.ok()) {
    return Status::Unavailable("the " + spec.role + " worker (" + spec.python + ") did not start: " +
                               hello.status().message());
  }
  worker->hello_ = *hello;
  return worker;
}

Status Worker::Fail(const Status& status) {
  alive_ = false;
  process_->KillGroup();
  ExitStatus ended = process_->Wait();
  process_->WaitForOutputEnd(2.0);
  std::string tail = process_->OutputTail();
  if (tail.size() > 4000) tail = "..." + tail.substr(tail.size() - 4000);
  std::string detail = status.message() + "; worker " + ended.ToString();
  if (!tail.empty()) detail += "; its last output:\n" + tail;
  return status.code() == StatusCode::kTimeout ? Status::Timeout(detail) : Status::Unavailable(detail);
}

Result<Json> Worker::Call(const std::string& op, const Json& fields, double timeout_s) {
  if (!alive_) return Status::Unavailable("the worker is no longer running");
  Json request = fields.is_object() ? fields : Json::object();
  int id = next_id_++;
  request["id"] = id;
  request["op"] = op;
  Status sent = channel_.Send(request);
  if (!sent.ok()) return Fail(sent);
  auto reply = channel_.Receive(timeout_s);
  if (!reply.ok()) return Fail(reply.status());
  if (JsonGet<int>(*reply, "id", -1) != id) return Fail(Status::Internal("worker replied out of order"));
  if (JsonGet<bool>(*reply, "ok", false)) return (*reply)["result"];
  const Json& error = JsonField(*reply, "error");
  std::string message = JsonGet<std::string>(error, "message", "unknown worker error");
  if (JsonGet<std::string>(error, "kind", "") == "user") return Status::InvalidArgument(message);
  return Status::Internal(op + " failed in the worker: " + message + "\n" + JsonGet<std::string>(error, "traceback", ""));
}

}  // namespace kforge
