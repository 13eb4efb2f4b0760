#include "serve/eval_service.h"

#include <algorithm>

#include <fmt/format.h>
#include <httplib.h>

#include "core/files.h"
#include "core/hash.h"
#include "core/log.h"
#include "sandbox/cpu_affinity.h"

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
}

size_t EvalService::Shutdown() {
  const size_t dropped = queue_.Close();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
  return dropped;
}

void EvalService::Work(size_t slot) {
  // Side by side, each slot keeps to its share of the cores (its workers and candidates inherit it).
  if (slots_.size() > 1) {
    if (Status pinned = PinCurrentThread(CpuShare(static_cast<int>(slot), static_cast<int>(slots_.size()))); !pinned.ok()) {
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
  const fs::path folder = options_.task_folder / Sha256Hex(submission.source);
  const fs::path path = folder / (submission.name + ".py");
  std::lock_guard<std::mutex> lock(tasks_mutex_);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return Status::IoError(fmt::format("cannot create {}: {}", folder.string(), ec.message()));
  if (!fs::exists(path)) RETURN_IF_ERROR(WriteFileAtomically(path, submission.source));
  ASSIGN_OR_RETURN(TaskFile task, ReadTaskFile(path));
  task.name = submission.name;
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
  std::string name = fs::path(stored->path).stem().string();
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos) {
    name = "task";
  }
  return AddTask({name, stored->source});
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
  auto client_of = [this](const httplib::Request& request) -> std::optional<std::string> {
    if (tokens_ == nullptr) return std::string("local");
    return tokens_->ClientOf(request.get_header_value("Authorization"));
  };
  auto authorized = [client_of](const httplib::Request& request, httplib::Response& response) {
    if (client_of(request)) return true;
    response.set_header("WWW-Authenticate", "Bearer");
    Reply(response, 401, {{"error", "this service needs \"Authorization: Bearer <token>\" with a token it knows"}});
    return false;
  };
  server.Post("/v1/tasks", [this, authorized](const httplib::Request& request, httplib::Response& response) {
    if (!authorized(request, response)) return;
    auto body = BodyJson(request);
    if (!body.ok()) return ReplyError(response, body.status());
    auto submission = ParseTaskSubmission(*body, options_.limits);
    if (!submission.ok()) return ReplyError(response, submission.status());
    auto task = AddTask(*submission);
    if (!task.ok()) return ReplyError(response, task.status());
    Reply(response, 201, {{"task_hash", task->hash}, {"name", task->name}});
  });
  auto submit = [this, client_of, authorized](bool batch) {
    return [this, client_of, authorized, batch](const httplib::Request& request, httplib::Response& response) {
      if (!authorized(request, response)) return;
      auto body = BodyJson(request);
      if (!body.ok()) return ReplyError(response, body.status());
      auto submissions = ParseEvalSubmissions(*body, batch, options_.limits, options_.defaults);
      if (!submissions.ok()) return ReplyError(response, submissions.status());
      auto ids = Submit(*client_of(request), *submissions);
      if (!ids.ok()) return ReplyError(response, ids.status());
      if (batch) return Reply(response, 202, {{"ids", *ids}, {"status", "queued"}});
      Reply(response, 202, {{"id", ids->front()}, {"status", "queued"}});
    };
  };
  server.Post("/v1/evaluations", submit(false));
  server.Post("/v1/batch", submit(true));
  server.Get(R"(/v1/evaluations/(\d+))", [this, authorized](const httplib::Request& request, httplib::Response& response) {
    if (!authorized(request, response)) return;
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
  server.Post("/v1/results", [this, authorized](const httplib::Request& request, httplib::Response& response) {
    if (!authorized(request, response)) return;
    auto body = BodyJson(request);
    if (!body.ok()) return ReplyError(response, body.status());
    auto query = ParseResultsQuery(*body, options_.limits.max_batch, options_.max_wait_s);
    if (!query.ok()) return ReplyError(response, query.status());
    Json results = Json::array();
    for (const EvalJobView& view : queue_.WaitDone(query->ids, query->wait_s)) results.push_back(JobJson(view, query->evidence));
    Reply(response, 200, {{"results", results}});
  });
  server.Get("/v1/queue", [this, authorized](const httplib::Request& request, httplib::Response& response) {
    if (!authorized(request, response)) return;
    Json stats = queue_.Stats().ToJson();
    stats["workers"] = slots_.size();
    Reply(response, 200, stats);
  });
  server.Get("/v1/health", [this, authorized](const httplib::Request& request, httplib::Response& response) {
    if (!authorized(request, response)) return;
    Json health = options_.info;
    health["ok"] = true;
    health["workers"] = slots_.size();
    Reply(response, 200, health);
  });
}

}  // namespace kforge
