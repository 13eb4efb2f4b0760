#include "eval/candidate_run.h"

#include <fmt/format.h>

namespace kforge {
namespace {

// Reads `key` of `object` as T, where null means "absent"; a missing key or a value of another
// type is an error naming it.
class Reader {
 public:
  Reader(const Json& object, std::string where) : object_(object), where_(std::move(where)) {}

  template <typename T>
  Result<std::optional<T>> Optional(const char* key) const {
    if (!object_.contains(key)) return Missing(key);
    const Json& value = object_[key];
    if (value.is_null()) return std::optional<T>();
    try {
      return std::optional<T>(value.get<T>());
    } catch (const Json::exception&) {
      return Status::Internal(fmt::format("{}: '{}' has the wrong type ({})", where_, key, value.dump().substr(0, 80)));
    }
  }

  template <typename T>
  Result<T> Required(const char* key) const {
    ASSIGN_OR_RETURN(std::optional<T> value, Optional<T>(key));
    if (!value) return Status::Internal(fmt::format("{}: '{}' is null", where_, key));
    return *value;
  }

  // A key the writer may leave out (older reports, optional facts): null when absent.
  Json Loose(const char* key) const { return object_.contains(key) ? object_[key] : Json(); }

 private:
  Status Missing(const char* key) const { return Status::Internal(fmt::format("{} lacks '{}'", where_, key)); }

  const Json& object_;
  std::string where_;
};

Result<CandidateResult> ParseResult(const Json& json) {
  if (!json.is_object()) return Status::Internal("the candidate's result is not a JSON object");
  CandidateResult result;
  result.raw = json;
  Reader read(json, "the candidate's result");
  ASSIGN_OR_RETURN(std::optional<Json> error, read.Optional<Json>("error"));
  if (error && !error->is_object()) return Status::Internal("the candidate's error is not an object");
  if (error) {
    Reader fields(*error, "the candidate's error");
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
    Reader fields(finding, "a runtime finding");
    RuntimeFinding parsed;
    ASSIGN_OR_RETURN(parsed.check, fields.Required<std::string>("check"));
    ASSIGN_OR_RETURN(std::optional<std::string> message, fields.Optional<std::string>("message"));
    parsed.message = message.value_or("");
    result.findings.push_back(std::move(parsed));
  }
  result.timing = read.Loose("timing");
  result.provenance = read.Loose("provenance");
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
  Reader read(reply, "the zygote's report");
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
