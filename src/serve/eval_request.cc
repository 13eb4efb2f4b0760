#include "serve/eval_request.h"

#include <set>

#include <fmt/format.h>

namespace kforge {
namespace {

Status OnlyKnownFields(const Json& object, const std::set<std::string>& known, const std::string& what) {
  if (!object.is_object()) return Status::InvalidArgument(what + " must be a JSON object");
  for (const auto& [key, value] : object.items()) {
    if (!known.count(key)) {
      std::string names;
      for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
      return Status::InvalidArgument(fmt::format("{}: unknown field '{}' (known: {})", what, key, names));
    }
  }
  return Status::Ok();
}

Result<std::string> SourceField(const Json& object, const char* key, const std::string& what, const ServiceLimits& limits) {
  const Json& value = JsonField(object, key);
  if (!value.is_string()) return Status::InvalidArgument(fmt::format("{}: '{}' must be a string of Python source", what, key));
  const std::string& source = value.get_ref<const std::string&>();
  if (source.empty()) return Status::InvalidArgument(fmt::format("{}: '{}' is empty", what, key));
  if (source.size() > limits.max_source_bytes) {
    return Status::InvalidArgument(fmt::format("{}: '{}' is {} bytes, over the service's limit of {}", what, key,
                                               source.size(), limits.max_source_bytes));
  }
  return source;
}

bool IsHexHash(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

Result<EvalJobOptions> ParseJobOptions(const Json& options, const ServiceLimits& limits, EvalJobOptions parsed) {
  if (options.is_null()) return parsed;
  RETURN_IF_ERROR(OnlyKnownFields(options, {"seeds", "timeout_s", "mode", "precision", "timing"}, "options"));
  if (options.contains("seeds")) {
    const Json& seeds = options["seeds"];
    if (!seeds.is_number_integer() || seeds.get<int64_t>() < 1 || seeds.get<int64_t>() > limits.max_seeds) {
      return Status::InvalidArgument(fmt::format("options.seeds must be an integer from 1 to {}", limits.max_seeds));
    }
    parsed.seeds = seeds.get<int>();
  }
  if (options.contains("timeout_s")) {
    const Json& timeout = options["timeout_s"];
    if (!timeout.is_number() || timeout.get<double>() <= 0 || timeout.get<double>() > limits.max_timeout_s) {
      return Status::InvalidArgument(fmt::format("options.timeout_s must be a number of seconds above 0 and at most {}",
                                                 limits.max_timeout_s));
    }
    parsed.timeout_s = timeout.get<double>();
  }
  if (options.contains("mode")) {
    const Json& mode = options["mode"];
    if (!mode.is_string() || (mode != "strict" && mode != "partial")) {
      return Status::InvalidArgument("options.mode must be \"strict\" or \"partial\"");
    }
    parsed.mode = mode.get<std::string>();
  }
  if (options.contains("precision")) {
    const Json& precision = options["precision"];
    if (!precision.is_string() || (precision != "fp32" && precision != "tf32" && precision != "bf16")) {
      return Status::InvalidArgument("options.precision must be \"fp32\", \"tf32\" or \"bf16\"");
    }
    parsed.precision = precision.get<std::string>();
  }
  if (options.contains("timing")) {
    if (!options["timing"].is_boolean()) return Status::InvalidArgument("options.timing must be true or false");
    parsed.timing = options["timing"].get<bool>();
  }
  return parsed;
}

Json JobOptionsToJson(const EvalJobOptions& options) {
  return {{"seeds", options.seeds}, {"timeout_s", options.timeout_s}, {"mode", options.mode},
          {"precision", options.precision}, {"timing", options.timing}};
}

namespace {

// The task part of an evaluation or batch: inline, or by hash.
Status ParseTaskReference(const Json& body, const std::string& what, const ServiceLimits& limits, EvalSubmission& into) {
  const bool inline_task = body.contains("task");
  const bool by_hash = body.contains("task_hash");
  if (inline_task == by_hash) return Status::InvalidArgument(what + ": give exactly one of 'task' and 'task_hash'");
  if (inline_task) {
    ASSIGN_OR_RETURN(TaskSubmission task, ParseTaskSubmission(body["task"], limits));
    into.task = std::move(task);
    return Status::Ok();
  }
  const Json& hash = body["task_hash"];
  if (!hash.is_string() || !IsHexHash(hash.get<std::string>())) {
    return Status::InvalidArgument(what + ": 'task_hash' must be the 64 lowercase hex digits POST /v1/tasks returned");
  }
  into.task_hash = hash.get<std::string>();
  return Status::Ok();
}

Result<EvalSubmission> ParseOne(const Json& body, const std::string& what, const ServiceLimits& limits,
                                const EvalJobOptions& defaults) {
  RETURN_IF_ERROR(OnlyKnownFields(body, {"task", "task_hash", "candidate", "options"}, what));
  EvalSubmission submission;
  RETURN_IF_ERROR(ParseTaskReference(body, what, limits, submission));
  ASSIGN_OR_RETURN(submission.candidate, SourceField(body, "candidate", what, limits));
  ASSIGN_OR_RETURN(submission.options, ParseJobOptions(JsonField(body, "options"), limits, defaults));
  return submission;
}

}  // namespace

bool IsTaskName(const std::string& name) {
  return !name.empty() && name.size() <= 100 &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
}

Result<TaskSubmission> ParseTaskSubmission(const Json& body, const ServiceLimits& limits) {
  RETURN_IF_ERROR(OnlyKnownFields(body, {"source", "name"}, "task"));
  TaskSubmission task;
  ASSIGN_OR_RETURN(task.source, SourceField(body, "source", "task", limits));
  if (task.source.find("class Model") == std::string::npos) {
    return Status::InvalidArgument("task: the source defines no `class Model` (KernelBench format: Model, get_inputs, "
                                   "get_init_inputs)");
  }
  task.name = JsonGet<std::string>(body, "name", "task");
  if (body.contains("name") && !body["name"].is_string()) return Status::InvalidArgument("task: 'name' must be a string");
  if (!IsTaskName(task.name)) {
    return Status::InvalidArgument("task: 'name' must be 1 to 100 letters, digits, '_' or '-'");
  }
  return task;
}

Result<std::vector<EvalSubmission>> ParseEvalSubmissions(const Json& body, bool batch, const ServiceLimits& limits,
                                                         const EvalJobOptions& defaults) {
  if (!batch) {
    ASSIGN_OR_RETURN(EvalSubmission one, ParseOne(body, "evaluation", limits, defaults));
    return std::vector<EvalSubmission>{std::move(one)};
  }
  std::vector<EvalSubmission> submissions;
  if (body.is_object() && body.contains("jobs")) {
    RETURN_IF_ERROR(OnlyKnownFields(body, {"jobs"}, "batch"));
    const Json& jobs = body["jobs"];
    if (!jobs.is_array() || jobs.empty()) return Status::InvalidArgument("batch: 'jobs' must be a non-empty array");
    if (jobs.size() > limits.max_batch) {
      return Status::InvalidArgument(fmt::format("batch: {} jobs, over the limit of {} per request", jobs.size(), limits.max_batch));
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
      ASSIGN_OR_RETURN(EvalSubmission one, ParseOne(jobs[i], fmt::format("batch: jobs[{}]", i), limits, defaults));
      submissions.push_back(std::move(one));
    }
    return submissions;
  }
  RETURN_IF_ERROR(OnlyKnownFields(body, {"task", "task_hash", "candidates", "options"}, "batch"));
  EvalSubmission shared;
  RETURN_IF_ERROR(ParseTaskReference(body, "batch", limits, shared));
  ASSIGN_OR_RETURN(shared.options, ParseJobOptions(JsonField(body, "options"), limits, defaults));
  const Json& candidates = JsonField(body, "candidates");
  if (!candidates.is_array() || candidates.empty()) return Status::InvalidArgument("batch: 'candidates' must be a non-empty array");
  if (candidates.size() > limits.max_batch) {
    return Status::InvalidArgument(fmt::format("batch: {} candidates, over the limit of {} per request", candidates.size(),
                                               limits.max_batch));
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    EvalSubmission one = shared;
    ASSIGN_OR_RETURN(one.candidate, SourceField(Json{{"candidate", candidates[i]}}, "candidate",
                                                fmt::format("batch: candidates[{}]", i), limits));
    submissions.push_back(std::move(one));
  }
  return submissions;
}

Result<ResultsQuery> ParseResultsQuery(const Json& body, size_t max_ids, double max_wait_s) {
  RETURN_IF_ERROR(OnlyKnownFields(body, {"ids", "wait_s", "evidence"}, "results"));
  ResultsQuery query;
  const Json& ids = JsonField(body, "ids");
  if (!ids.is_array() || ids.empty() || ids.size() > max_ids) {
    return Status::InvalidArgument(fmt::format("results: 'ids' must be an array of 1 to {} evaluation ids", max_ids));
  }
  for (const Json& id : ids) {
    if (!id.is_number_integer()) return Status::InvalidArgument("results: every id must be an integer");
    query.ids.push_back(id.get<int64_t>());
  }
  if (body.contains("wait_s")) {
    const Json& wait = body["wait_s"];
    if (!wait.is_number() || wait.get<double>() < 0 || wait.get<double>() > max_wait_s) {
      return Status::InvalidArgument(fmt::format("results: 'wait_s' must be from 0 to {} seconds", max_wait_s));
    }
    query.wait_s = wait.get<double>();
  }
  if (body.contains("evidence")) {
    if (!body["evidence"].is_boolean()) return Status::InvalidArgument("results: 'evidence' must be true or false");
    query.evidence = body["evidence"].get<bool>();
  }
  return query;
}

Json LeasedJobToJson(const LeasedJob& job) {
  return Json{{"id", job.id},
              {"client", job.client},
              {"task", {{"hash", job.task_hash}, {"name", job.task.name}, {"source", job.task.source}}},
              {"candidate", job.candidate},
              {"options", JobOptionsToJson(job.options)}};
}

Result<LeasedJob> ParseLeasedJob(const Json& body, const ServiceLimits& limits) {
  RETURN_IF_ERROR(OnlyKnownFields(body, {"id", "client", "task", "candidate", "options"}, "leased job"));
  LeasedJob job;
  const Json& id = JsonField(body, "id");
  if (!id.is_number_integer() || id.get<int64_t>() < 1) return Status::InvalidArgument("leased job: 'id' must be a positive integer");
  job.id = id.get<int64_t>();
  const Json& client = JsonField(body, "client");
  if (!client.is_string()) return Status::InvalidArgument("leased job: 'client' must be a string");
  job.client = client.get<std::string>();
  const Json& task = JsonField(body, "task");
  RETURN_IF_ERROR(OnlyKnownFields(task, {"hash", "name", "source"}, "leased job's task"));
  const Json& hash = JsonField(task, "hash");
  if (!hash.is_string() || !IsHexHash(hash.get<std::string>())) {
    return Status::InvalidArgument("leased job's task: 'hash' must be 64 lowercase hex digits");
  }
  job.task_hash = hash.get<std::string>();
  const Json& name = JsonField(task, "name");
  if (!name.is_string() || !IsTaskName(name.get<std::string>())) {
    return Status::InvalidArgument("leased job's task: 'name' must be 1 to 100 letters, digits, '_' or '-'");
  }
  job.task.name = name.get<std::string>();
  ASSIGN_OR_RETURN(job.task.source, SourceField(task, "source", "leased job's task", limits));
  ASSIGN_OR_RETURN(job.candidate, SourceField(body, "candidate", "leased job", limits));
  ASSIGN_OR_RETURN(job.options, ParseJobOptions(JsonField(body, "options"), limits, {}));
  return job;
}

Json LeaseResultToJson(const LeaseResult& result) {
  if (!result.evaluation) return Json{{"error", result.error}};
  return Json{{"evaluation", result.evaluation->ToJson()}, {"fingerprint", result.fingerprint}};
}

Result<LeaseResult> ParseLeaseResult(const Json& body) {
  if (!body.is_object() || body.contains("evaluation") == body.contains("error")) {
    return Status::InvalidArgument("a result is {\"evaluation\": {...}, \"fingerprint\": {...}} or {\"error\": \"...\"}");
  }
  RETURN_IF_ERROR(OnlyKnownFields(body, {"evaluation", "fingerprint", "error"}, "result"));
  LeaseResult result;
  if (body.contains("error")) {
    if (!body["error"].is_string()) return Status::InvalidArgument("result: 'error' must be a string");
    result.error = body["error"].get<std::string>();
    if (result.error.empty()) result.error = "the worker failed";
    return result;
  }
  ASSIGN_OR_RETURN(Evaluation evaluation, EvaluationFromJson(body["evaluation"]));
  result.evaluation = std::move(evaluation);
  const Json& fingerprint = JsonField(body, "fingerprint");
  if (!fingerprint.is_null() && !fingerprint.is_object()) return Status::InvalidArgument("result: 'fingerprint' must be an object");
  result.fingerprint = fingerprint;
  return result;
}

}  // namespace kforge
