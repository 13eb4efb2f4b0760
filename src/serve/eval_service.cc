#include "serve/eval_service.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <httplib.h>

#include "core/files.h"
#include "core/hash.h"
#include "core/log.h"
#include "sandbox/cpu_affinity.h"
#include "serve/service_judge.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

int HttpStatusOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

void Reply(httplib::Response& response, int status, const Json& body) {
  response.status = status;
  response.set_header("Cache-Control", "no-store");
  response.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

void ReplyError(httplib::Response& response, const Status& status) {
  Reply(response, HttpStatusOf(status), {{"error", status.message()}});
}

Result<Json> BodyJson(const httplib::Request& request) {
  if (request.body.empty()) return Status::InvalidArgument("the request has no body: send a JSON object");
  auto parsed = ParseJson(request.body, "the request body");
  if (!parsed.ok()) return Status::InvalidArgument(parsed.status().message());
  return parsed;
}

// A query parameter as a number within [low, high]; `fallback` when absent.
Result<double> NumberParam(const httplib::Request& request, const char* name, double fallback, double low, double high) {
  if (!request.has_param(name)) return fallback;
  const std::string text = request.get_param_value(name);
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && value >= low && value <= high) return value;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument(fmt::format("query parameter {} must be a number from {} to {}", name, low, high));
}

}  // namespace

EvalService::EvalService(Store* store, const AccessTokens* tokens, EvalServiceOptions options,
                         std::vector<EvalJobRunner> slots)
    : store_(store), tokens_(tokens), options_(std::move(options)), slots_(std::move(slots)), queue_(options_.queue) {}

EvalService::~EvalService() { Shutdown(); }

void EvalService::Start() {
  for (size_t slot = 0; slot < slots_.size(); ++slot) threads_.emplace_back([this, slot] { Work(slot); });
  if (options_.remote_workers) threads_.emplace_back([this] { ReapLeases(); });
}

size_t EvalService::Shutdown() {
  const size_t dropped = queue_.Close();
  {
    std::lock_guard<std::mutex> lock(leases_mutex_);
    stopping_ = true;
  }
  leases_changed_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
  std::lock_guard<std::mutex> lock(leases_mutex_);
  for (auto& [id, lease] : leases_) {
    queue_.Finish(id, {{"error", "the service shut down while worker " + lease.worker + " was evaluating it"}});
  }
  leases_.clear();
  return dropped;
}

void EvalService::ReapLeases() {
  std::unique_lock<std::mutex> lock(leases_mutex_);
  while (!stopping_) {
    leases_changed_.wait_for(lock, std::chrono::seconds(1));
    const double now = RealClock().NowSeconds();
    for (auto it = leases_.begin(); it != leases_.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      queue_.Finish(it->first, {{"error", fmt::format("worker {} took it and did not answer within its lease; submit it "
                                                      "again", it->second.worker)}});
      it = leases_.erase(it);
    }
  }
}

std::optional<Json> EvalService::LeaseNext(const std::string& worker, double wait_s) {
  const double until = RealClock().NowSeconds() + wait_s;
  while (true) {
    std::optional<EvalJob> job = queue_.Next(std::max(0.0, until - RealClock().NowSeconds()));
    if (!job) return std::nullopt;
    auto task = TaskByHash(job->spec.task_hash);
    if (!task.ok()) {  // cannot happen for a job the queue accepted, unless the task's folder was removed
      queue_.Finish(job->id, {{"error", task.status().message()}});
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(leases_mutex_);
      leases_[job->id] = {*job, worker, RealClock().NowSeconds() + job->spec.options.timeout_s + options_.lease_margin_s};
    }
    return LeasedJobToJson(LeasedJob{job->id, job->client, task->hash, {task->name, task->source}, job->spec.candidate,
                                     job->spec.options});
  }
}

Result<int64_t> EvalService::CompleteLease(int64_t id, const Json& body) {
  auto result = ParseLeaseResult(body);
  Lease lease;
  {
    std::lock_guard<std::mutex> lock(leases_mutex_);
    auto it = leases_.find(id);
    if (it == leases_.end()) return Status::NotFound(fmt::format("evaluation {} is not leased to a worker (its lease ran out, or it was answered)", id));
    // A malformed answer that is not even a result leaves the lease to run out or be answered again.
    if (!result.ok() && !(body.is_object() && body.contains("evaluation"))) return result.status();
    lease = std::move(it->second);
    leases_.erase(it);
  }
  if (!result.ok()) {
    queue_.Finish(id, {{"error", "worker " + lease.worker + " answered with a malformed evaluation"}});
    return result.status();
  }
  if (!result->evaluation) {
    queue_.Finish(id, {{"error", result->error}});
    return 0;
  }
  const Evaluation& evaluation = *result->evaluation;
  int64_t evaluation_id = 0;
  auto task = TaskByHash(lease.job.spec.task_hash);
  if (task.ok() && options_.record_remote) {
    // Never this machine's fingerprint: the evaluation ran elsewhere.
    const Json& fingerprint = result->fingerprint;
    auto stored = options_.record_remote(*task, lease.job.spec.candidate, "service:" + lease.job.client, evaluation,
                                         lease.job.spec.options.precision, lease.job.spec.options.mode,
                                         fingerprint.is_object() ? fingerprint : Json{{"remote", "unknown"}});
    if (stored.ok()) evaluation_id = *stored;
    else LogInfo("warning: the evaluation of job {} by worker {} was not stored: {}", id, lease.worker, stored.status().message());
  }
  Json fields = JobResultFields(evaluation, evaluation_id, Sha256Hex(lease.job.spec.candidate));
  fields["worker"] = lease.worker;
  queue_.Finish(id, std::move(fields));
  return evaluation_id;
}

void EvalService::Work(size_t slot) {
  // Side by side, each slot keeps to its share of the cores (its workers and candidates inherit it).
  if (slots_.size() > 1) {
    if (Status pinned = PinCurrentThread(PartitionCores(AllowedCores(), static_cast<int>(slots_.size()))[slot]); !pinned.ok()) {
      LogInfo("warning: worker slot {}: {}", slot, pinned.message());
    }
  }
  while (std::optional<EvalJob> job = queue_.Next()) {
    Json result;
    auto task = TaskByHash(job->spec.task_hash);
    if (!task.ok()) {
      result = {{"error", task.status().message()}};
    } else {
      try {
        result = slots_[slot](*job, *task);
      } catch (const std::exception& error) {  // a bug in a runner must not take the service down
        result = {{"error", fmt::format("internal error: {}", error.what())}};
      }
    }
    queue_.Finish(job->id, std::move(result));
  }
}

Result<TaskFile> EvalService::AddTask(const TaskSubmission& submission) {
  std::lock_guard<std::mutex> lock(tasks_mutex_);
  ASSIGN_OR_RETURN(TaskFile task, WriteServiceTask(options_.task_folder, submission));
  if (store_ != nullptr) {
    ASSIGN_OR_RETURN(task.hash, store_->RecordTask(task.path.string(), task.name, task.source));
  }
  tasks_.emplace(task.hash, task);
  return task;
}

Result<TaskFile> EvalService::TaskByHash(const std::string& hash) {
  {
    std::lock_guard<std::mutex> lock(tasks_mutex_);
    if (auto it = tasks_.find(hash); it != tasks_.end()) return it->second;
  }
  if (store_ == nullptr) return Status::NotFound("unknown task_hash " + hash + ": register the task with POST /v1/tasks");
  auto stored = store_->GetTask(hash);
  if (!stored.ok()) return Status::NotFound("unknown task_hash " + hash + ": register the task with POST /v1/tasks");
  const std::string name = fs::path(stored->path).stem().string();
  return AddTask({IsTaskName(name) ? name : "task", stored->source});
}

Result<std::vector<int64_t>> EvalService::Submit(const std::string& client, const std::vector<EvalSubmission>& submissions) {
  std::vector<EvalJobSpec> specs;
  for (const EvalSubmission& submission : submissions) {
    EvalJobSpec spec{submission.task_hash, submission.candidate, submission.options};
    if (submission.task) {
      ASSIGN_OR_RETURN(TaskFile task, AddTask(*submission.task));
      spec.task_hash = task.hash;
    } else {
      RETURN_IF_ERROR(TaskByHash(spec.task_hash).status());
    }
    specs.push_back(std::move(spec));
  }
  return queue_.Submit(client, std::move(specs));
}

Json EvalService::JobJson(const EvalJobView& view, bool evidence) const {
  Json job = {{"id", view.id}, {"client", view.client}, {"status", ToString(view.state)}, {"task_hash", view.task_hash},
              {"queued_s", view.queued_s}, {"run_s", view.run_s}};
  if (view.result.is_object()) {
    for (const auto& [key, value] : view.result.items()) {
      if (key != "evaluation" || evidence) job[key] = value;
    }
  }
  if (view.state == EvalJobState::kDone && job.contains("error")) job["status"] = "error";
  return job;
}

void EvalService::Install(httplib::Server& server) {
  server.set_payload_max_length(options_.limits.max_body_bytes);
  // Requests without a known token never get here (RequireTokens); the token names the client.
  if (tokens_ != nullptr) RequireTokens(server, *tokens_);
  auto client_of = [this](const httplib::Request& request) {
    if (tokens_ == nullptr) return std::string("local");
    return tokens_->ClientOf(request.get_header_value("Authorization")).value_or("");
  };
  server.Post("/v1/tasks", [this](const httplib::Request& request, httplib::Response& response) {
    auto body = BodyJson(request);
    if (!body.ok()) return ReplyError(response, body.status());
    auto submission = ParseTaskSubmission(*body, options_.limits);
    if (!submission.ok()) return ReplyError(response, submission.status());
    auto task = AddTask(*submission);
    if (!task.ok()) return ReplyError(response, task.status());
    Reply(response, 201, {{"task_hash", task->hash}, {"name", task->name}});
  });
  auto submit = [this, client_of](bool batch) {
    return [this, client_of, batch](const httplib::Request& request, httplib::Response& response) {
      auto body = BodyJson(request);
      if (!body.ok()) return ReplyError(response, body.status());
      auto submissions = ParseEvalSubmissions(*body, batch, options_.limits, options_.defaults);
      if (!submissions.ok()) return ReplyError(response, submissions.status());
      auto ids = Submit(client_of(request), *submissions);
      if (!ids.ok()) return ReplyError(response, ids.status());
      if (batch) return Reply(response, 202, {{"ids", *ids}, {"status", "queued"}});
      Reply(response, 202, {{"id", ids->front()}, {"status", "queued"}});
    };
  };
  server.Post("/v1/evaluations", submit(false));
  server.Post("/v1/batch", submit(true));
  server.Get(R"(/v1/evaluations/(\d+))", [this](const httplib::Request& request, httplib::Response& response) {
    auto wait = NumberParam(request, "wait_s", 0, 0, options_.max_wait_s);
    if (!wait.ok()) return ReplyError(response, wait.status());
    const bool evidence = request.get_param_value("evidence") != "0";
    int64_t id = 0;
    try {
      id = std::stoll(request.matches[1].str());
    } catch (const std::exception&) {
      return ReplyError(response, Status::NotFound("no evaluation " + request.matches[1].str()));
    }
    auto views = queue_.WaitDone({id}, *wait);
    if (views.empty()) return ReplyError(response, Status::NotFound(fmt::format("no evaluation {} in this service", id)));
    Reply(response, 200, JobJson(views.front(), evidence));
  });
  server.Post("/v1/results", [this](const httplib::Request& request, httplib::Response& response) {
    auto body = BodyJson(request);
    if (!body.ok()) return ReplyError(response, body.status());
    auto query = ParseResultsQuery(*body, options_.limits.max_batch, options_.max_wait_s);
    if (!query.ok()) return ReplyError(response, query.status());
    Json results = Json::array();
    for (const EvalJobView& view : queue_.WaitDone(query->ids, query->wait_s)) results.push_back(JobJson(view, query->evidence));
    Reply(response, 200, {{"results", results}});
  });
  server.Get("/v1/queue", [this](const httplib::Request& request, httplib::Response& response) {
    Json stats = queue_.Stats().ToJson();
    stats["workers"] = slots_.size();
    Reply(response, 200, stats);
  });
  if (options_.remote_workers) InstallRemote(server);
  server.Get("/v1/health", [this](const httplib::Request& request, httplib::Response& response) {
    Json health = options_.info;
    health["ok"] = true;
    health["workers"] = slots_.size();
    Reply(response, 200, health);
  });
}

void EvalService::InstallRemote(httplib::Server& server) {
  // With tokens, only clients marked "worker" may see other clients' jobs.
  // Every request here carries a known token (RequireTokens): only a worker's may take jobs.
  auto worker_of = [this](const httplib::Request& request, httplib::Response& response) -> std::optional<std::string> {
    if (tokens_ == nullptr) return std::string("local");
    std::optional<std::string> client = tokens_->ClientOf(request.get_header_value("Authorization"));
    if (client && tokens_->IsWorker(*client)) return client;
    Reply(response, 403, {{"error", "taking jobs needs a worker's token (\"<name> <token> worker\" in the token file)"}});
    return std::nullopt;
  };
  server.Post("/v1/work/next", [this, worker_of](const httplib::Request& request, httplib::Response& response) {
    std::optional<std::string> worker = worker_of(request, response);
    if (!worker) return;
    auto body = BodyJson(request);
    if (!body.ok()) return ReplyError(response, body.status());
    const double wait_s = std::clamp(JsonGet<double>(*body, "wait_s", 0), 0.0, options_.max_wait_s);
    const std::string name = *worker + "/" + JsonGet<std::string>(*body, "worker", "worker");
    std::optional<Json> job = LeaseNext(name, wait_s);
    if (!job) {
      response.status = 204;
      return;
    }
    Reply(response, 200, {{"job", *job}});
  });
  server.Post(R"(/v1/work/(\d+)/result)", [this, worker_of](const httplib::Request& request, httplib::Response& response) {
    if (!worker_of(request, response)) return;
    auto body = BodyJson(request);
    if (!body.ok()) return ReplyError(response, body.status());
    int64_t id = 0;
    try {
      id = std::stoll(request.matches[1].str());
    } catch (const std::exception&) {
      return ReplyError(response, Status::NotFound("no evaluation " + request.matches[1].str()));
    }
    auto stored = CompleteLease(id, *body);
    if (!stored.ok()) {
      return Reply(response, stored.status().code() == StatusCode::kNotFound ? 409 : 400, {{"error", stored.status().message()}});
    }
    Reply(response, 200, {{"evaluation_id", *stored > 0 ? Json(*stored) : Json()}});
  });
}

}  // namespace kforge
