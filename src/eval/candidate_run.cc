#include "eval/candidate_run.h"

#include <fmt/format.h>

namespace kforge {
namespace {

Result<CandidateResult> ParseResult(const Json& json) {
  if (!json.is_object()) return Status::Internal("the candidate's result is not a JSON object");
  CandidateResult result;
  result.raw = json;
  JsonReader read(json, "the candidate's result");
  ASSIGN_OR_RETURN(std::optional<Json> error, read.Optional<Json>("error"));
  if (error && !error->is_object()) return Status::Internal("the candidate's error is not an object");
  if (error) {
    JsonReader fields(*error, "the candidate's error");
    CandidateError parsed;
    ASSIGN_OR_RETURN(parsed.kind, fields.Required<std::string>("kind"));
    ASSIGN_OR_RETURN(std::optional<std::string> phase, fields.Optional<std::string>("phase"));
    ASSIGN_OR_RETURN(std::optional<std::string> message, fields.Optional<std::string>("message"));
    parsed.phase = phase.value_or("?");
    parsed.message = message.value_or("");
    result.error = parsed;
  }
  Json findings = read.Loose("findings");
  if (!findings.is_null() && !findings.is_array()) return Status::Internal("the candidate's findings are not a list");
  for (const Json& finding : findings.is_array() ? findings : Json::array()) {
    if (!finding.is_object()) return Status::Internal("a finding of the candidate's is not an object");
    JsonReader fields(finding, "a runtime finding");
    RuntimeFinding parsed;
    ASSIGN_OR_RETURN(parsed.check, fields.Required<std::string>("check"));
    ASSIGN_OR_RETURN(std::optional<std::string> message, fields.Optional<std::string>("message"));
    parsed.message = message.value_or("");
    result.findings.push_back(std::move(parsed));
  }
  if (Json timing = read.Loose("timing"); !timing.is_null()) {
    JsonReader fields(timing, "the candidate's timing");
    CandidateTiming parsed;
    ASSIGN_OR_RETURN(parsed.method, fields.Required<std::string>("method"));
    ASSIGN_OR_RETURN(parsed.meaningful, fields.Required<bool>("meaningful"));
    ASSIGN_OR_RETURN(parsed.samples_ms, fields.Required<std::vector<double>>("samples_ms"));
    ASSIGN_OR_RETURN(parsed.host_ms, fields.Required<std::vector<double>>("host_ms"));
    ASSIGN_OR_RETURN(parsed.late_ms, fields.Required<std::vector<double>>("late_ms"));
    if (parsed.host_ms.size() != parsed.samples_ms.size() || parsed.late_ms.size() != parsed.samples_ms.size()) {
      return Status::Internal(fmt::format("the candidate's timing: {} samples but {} host and {} late times",
                                          parsed.samples_ms.size(), parsed.host_ms.size(), parsed.late_ms.size()));
    }
    parsed.backlog_ms = JsonGet<double>(timing, "backlog_ms", 0);
    parsed.l2_flush_bytes = fields.Loose("l2_flush_bytes");
    result.timing = std::move(parsed);
  }
  if (Json provenance = read.Loose("provenance"); !provenance.is_null()) {
    JsonReader fields(provenance, "the candidate's provenance");
    CandidateProvenance parsed;
    ASSIGN_OR_RETURN(parsed.authored_share, fields.Required<double>("authored_share"));
    ASSIGN_OR_RETURN(parsed.library_compute_names, fields.Required<std::vector<std::string>>("library_compute_names"));
    parsed.raw = provenance;
    result.provenance = std::move(parsed);
  }
  result.kernel_counters = read.Loose("kernel_counters");
  result.tuning = read.Loose("tuning");
  result.sandbox = read.Loose("sandbox");
  result.phase_s = read.Loose("phase_s");
  result.compile_ahead = read.Loose("compile_ahead");
  return result;
}

}  // namespace

Result<CandidateRun> ParseCandidateRun(const Json& reply) {
  if (!reply.is_object()) return Status::Internal("the zygote's report is not a JSON object");
  JsonReader read(reply, "the zygote's report");
  CandidateRun run;
  ASSIGN_OR_RETURN(run.exit_code, read.Optional<int>("exit_code"));
  ASSIGN_OR_RETURN(run.signal, read.Optional<int>("signal"));
  run.signal_name = read.Loose("signal_name").is_string() ? read.Loose("signal_name").get<std::string>() : "";
  ASSIGN_OR_RETURN(std::optional<std::string> killed_for, read.Optional<std::string>("killed_for"));
  run.killed_for = killed_for.value_or("");
  ASSIGN_OR_RETURN(run.wall_s, read.Required<double>("wall_s"));
  ASSIGN_OR_RETURN(run.peak_rss_bytes, read.Required<int64_t>("peak_rss_bytes"));
  ASSIGN_OR_RETURN(run.peak_processes, read.Required<int>("peak_processes"));
  run.isolation_seen = read.Loose("isolation_seen");
  ASSIGN_OR_RETURN(run.sandbox_violations, read.Required<std::vector<std::string>>("sandbox_violations"));
  ASSIGN_OR_RETURN(run.tampered_paths, read.Required<std::vector<std::string>>("tampered_paths"));
  ASSIGN_OR_RETURN(run.private_dir, read.Required<std::string>("private_dir"));
  ASSIGN_OR_RETURN(run.stdout_tail, read.Required<std::string>("stdout_tail"));
  ASSIGN_OR_RETURN(run.stderr_tail, read.Required<std::string>("stderr_tail"));
  ASSIGN_OR_RETURN(std::optional<Json> result, read.Optional<Json>("result"));
  if (result) {
    ASSIGN_OR_RETURN(CandidateResult parsed, ParseResult(*result));
    run.result = std::move(parsed);
  }
  return run;
}

}  // namespace kforge
