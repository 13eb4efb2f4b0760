#include "serve/service_judge.h"

#include <fmt/format.h>

#include "core/files.h"
#include "core/hash.h"
#include "core/log.h"

namespace kforge {

ServiceJudge::ServiceJudge(WorkerSource& workers, EvalOptions base, std::filesystem::path candidate_folder,
                           EvaluationRecorder record)
    : workers_(workers), base_(std::move(base)), candidate_folder_(std::move(candidate_folder)), record_(std::move(record)) {}

Json ServiceJudge::Run(const EvalJob& job, const TaskFile& task) {
  EvalOptions options = base_;
  options.seeds = job.spec.options.seeds;
  options.timeout_s = job.spec.options.timeout_s;
  options.timing = job.spec.options.timing;
  if (auto mode = ParseProvenanceMode(job.spec.options.mode)) options.mode = *mode;
  if (auto precision = ParsePrecision(job.spec.options.precision)) options.precision = *precision;

  std::error_code ec;
  std::filesystem::create_directories(candidate_folder_, ec);
  const std::filesystem::path candidate = candidate_folder_ / fmt::format("job_{}.py", job.id);
  if (Status written = WriteFile(candidate, job.spec.candidate); !written.ok()) {
    return {{"error", "the service could not write the candidate: " + written.message()}};
  }
  Evaluator evaluator(workers_, options);
  auto evaluation = evaluator.Evaluate(task, candidate);
  std::filesystem::remove(candidate, ec);
  if (!evaluation.ok()) return {{"error", evaluation.status().message()}};
  int64_t evaluation_id = 0;
  if (record_) {
    auto stored = record_(task, job.spec.candidate, "service:" + job.client, *evaluation, job.spec.options.precision,
                          job.spec.options.mode, Json());
    if (stored.ok()) evaluation_id = *stored;
    else LogInfo("warning: evaluation of job {} was not stored: {}", job.id, stored.status().message());
  }
  return JobResultFields(*evaluation, evaluation_id, Sha256Hex(job.spec.candidate));
}

Result<TaskFile> WriteServiceTask(const std::filesystem::path& folder, const TaskSubmission& submission) {
  const std::filesystem::path own = folder / Sha256Hex(submission.source);
  const std::filesystem::path path = own / (submission.name + ".py");
  std::error_code ec;
  std::filesystem::create_directories(own, ec);
  if (ec) return Status::IoError(fmt::format("cannot create {}: {}", own.string(), ec.message()));
  if (!std::filesystem::exists(path)) RETURN_IF_ERROR(WriteFileAtomically(path, submission.source));
  ASSIGN_OR_RETURN(TaskFile task, ReadTaskFile(path));
  task.name = submission.name;
  return task;
}

Json JobResultFields(const Evaluation& evaluation, int64_t evaluation_id, const std::string& candidate_hash) {
  return {{"verdict", evaluation.verdict.ToString()},
          {"verdict_kind", ToString(evaluation.verdict.kind)},
          {"check", evaluation.verdict.check.empty() ? Json() : Json(evaluation.verdict.check)},
          {"message", evaluation.verdict.message},
          {"accepted", evaluation.verdict.accepted()},
          {"timings_meaningful", evaluation.timings_meaningful},
          {"speedup", evaluation.speedup ? Json(evaluation.speedup->speedup) : Json()},
          {"candidate_ms", evaluation.candidate_ms ? Json(evaluation.candidate_ms->median) : Json()},
          {"reference_ms", evaluation.reference_ms ? Json(evaluation.reference_ms->median) : Json()},
          {"evaluation_id", evaluation_id > 0 ? Json(evaluation_id) : Json()},
          {"candidate_hash", candidate_hash},
          {"evaluation", evaluation.ToJson()}};
}

}  // namespace kforge
