#include "serve/remote_worker.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "core/log.h"
#include "serve/eval_request.h"

namespace kforge {
namespace {

// Sleeps `seconds` in short steps, returning early once `stop` is set.
void PauseUnlessStopped(double seconds, const std::atomic<bool>& stop) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!stop && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

struct Reply {
  int status = 0;  // 0: the service could not be reached
  Json body;
  std::string error;
};

Reply Post(httplib::Client& client, const std::string& path, const Json& body) {
  auto response = client.Post(path.c_str(), body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
  if (!response) return {0, Json(), httplib::to_string(response.error())};
  Reply reply{response->status, Json(), ""};
  if (!response->body.empty()) {
    auto parsed = ParseJson(response->body, "the service's reply");
    if (parsed.ok()) reply.body = *parsed;
  }
  reply.error = JsonGet<std::string>(reply.body, "error", "");
  return reply;
}

}  // namespace

RemoteWorker::RemoteWorker(RemoteWorkerOptions options, std::vector<ServiceJudge*> judges)
    : options_(std::move(options)), judges_(std::move(judges)) {}

Result<int64_t> RemoteWorker::Run(const std::atomic<bool>& stop) {
  std::atomic<int64_t> judged{0};
  std::mutex mutex;
  Status failure;
  std::vector<std::thread> threads;
  for (size_t slot = 0; slot < judges_.size(); ++slot) {
    threads.emplace_back([&, slot] {
      Status status = Serve(slot, stop, judged);
      std::lock_guard<std::mutex> lock(mutex);
      if (!status.ok() && failure.ok()) failure = status;
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (!failure.ok()) return failure;
  return judged.load();
}

Status RemoteWorker::Serve(size_t slot, const std::atomic<bool>& stop, std::atomic<int64_t>& judged) {
  httplib::Client client(options_.url);
  if (!client.is_valid()) return Status::InvalidArgument("--connect: cannot use '" + options_.url + "' (http://host:port)");
  if (!options_.token.empty()) client.set_bearer_token_auth(options_.token.c_str());
  client.set_connection_timeout(10);
  client.set_read_timeout(static_cast<time_t>(options_.wait_s) + 60);
  client.set_write_timeout(60);
  const std::string name = judges_.size() > 1 ? fmt::format("{}#{}", options_.name, slot) : options_.name;
  double pause_s = 1;
  // After a failed exchange: wait, twice as long each time up to max_pause_s.
  auto back_off = [&] {
    PauseUnlessStopped(pause_s, stop);
    pause_s = std::min(options_.max_pause_s, pause_s * 2);
  };
  while (!stop) {
    Reply next = Post(client, "/v1/work/next", {{"worker", name}, {"wait_s", options_.wait_s}});
    if (next.status == 401 || next.status == 403) {
      return Status::InvalidArgument("the service refused this worker: " + next.error);
    }
    if (next.status != 200 && next.status != 204) {
      LogInfo("worker {}: the service at {} did not answer ({}); trying again in {:.0f} s", name, options_.url,
              next.status == 0 ? next.error : std::to_string(next.status) + " " + next.error, pause_s);
      back_off();
      continue;
    }
    pause_s = 1;
    if (next.status == 204) continue;
    const Json& job_json = JsonField(next.body, "job");
    auto leased = ParseLeasedJob(job_json, ServiceLimits{.max_seeds = 64, .max_timeout_s = 1e9, .max_source_bytes = std::string::npos});
    LeaseResult result;
    int64_t id = leased.ok() ? leased->id : JsonGet<int64_t>(job_json, "id", 0);
    if (!leased.ok()) {
      if (id <= 0) {
        // Without the job's id there is nothing to answer: the lease runs out on the service's side.
        LogInfo("worker {}: the service leased a job this worker cannot read: {}", name, leased.status().message());
        back_off();
        continue;
      }
      result.error = "worker " + name + " could not read the job: " + leased.status().message();
    } else if (auto task = WriteServiceTask(options_.task_folder, leased->task); !task.ok()) {
      result.error = "worker " + name + " could not use the job: " + task.status().message();
    } else {
      EvalJob job;
      job.id = leased->id;
      job.client = leased->client;
      job.spec.candidate = leased->candidate;
      job.spec.options = leased->options;
      job.spec.task_hash = task->hash;
      Json judged_fields = judges_[slot]->Run(job, *task);
      if (judged_fields.contains("error")) {
        result.error = JsonGet<std::string>(judged_fields, "error", "the judge failed");
      } else if (auto evaluation = EvaluationFromJson(JsonField(judged_fields, "evaluation")); evaluation.ok()) {
        result.evaluation = std::move(*evaluation);
        result.fingerprint = options_.fingerprint;
      } else {
        result.error = "worker " + name + " made an evaluation it cannot send: " + evaluation.status().message();
      }
    }
    // The verdict is sent until the service takes it (or refuses it for good).
    const std::string path = fmt::format("/v1/work/{}/result", id);
    const Json body = LeaseResultToJson(result);
    while (true) {
      Reply sent = Post(client, path, body);
      if (sent.status == 200) break;
      if (sent.status != 0 && sent.status < 500) {
        LogInfo("worker {}: the service refused the result of job {}: {}", name, id, sent.error);
        break;
      }
      if (stop) break;
      LogInfo("worker {}: cannot send the result of job {} ({}); trying again in {:.0f} s", name, id,
              sent.status == 0 ? sent.error : std::to_string(sent.status), pause_s);
      back_off();
    }
    ++judged;
  }
  return Status::Ok();
}

}  // namespace kforge
