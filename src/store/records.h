// The rows the store keeps, as plain structs. Fields marked "set by the store" are ignored when
// recording and filled when reading. Times are ISO-8601 UTC text from the store's Clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kforge {

// What was evaluated: a candidate kernel, or the reference itself (a baseline has no candidate).
enum class EvaluationKind { kCandidate, kBaseline };

const char* ToString(EvaluationKind kind);
// "candidate" or "baseline"; anything else is InvalidArgument.
Result<EvaluationKind> ParseEvaluationKind(const std::string& text);

// JSON as the store writes it: compact, keys sorted (so equal values give equal text), invalid
// UTF-8 replaced by U+FFFD rather than thrown on.
std::string CanonicalJsonText(const Json& value);

// A machine and software fingerprint (GPU, driver, CUDA, torch, triton, python, kforge, host).
struct EnvironmentRecord {
  int64_t id = 0;                // set by the store
  std::string fingerprint_hash;  // set by the store: sha256 of json's canonical text
  Json json;
  std::string first_seen;  // set by the store
};

struct CandidateRecord {
  std::string hash;  // set by the store: sha256 of source
  std::string source;
  std::string origin;      // free text: "file:<path>", "llm:<model>", "codegen:triton", ...
  std::string first_seen;  // set by the store
};

struct TaskRecord {
  std::string hash;  // set by the store: sha256 of source
  std::string path;
  std::string name;
  std::string source;
  std::string first_seen;  // set by the store
};

// One timed quantity of an evaluation, e.g. "candidate_ms" or "reference_eager_ms".
struct MeasurementRecord {
  std::string name;
  std::vector<double> samples;
  double median = 0;
  double ci_low = 0;
  double ci_high = 0;
  std::string unit;  // "ms", ...

  bool operator==(const MeasurementRecord&) const = default;
};

// One evaluation with its typed verdict, its evidence and its measurements.
struct EvaluationRecord {
  int64_t id = 0;          // set by the store
  std::string created_at;  // set by the store
  std::optional<std::string> run_id;
  std::string task_hash;
  std::optional<std::string> candidate_hash;  // absent exactly when kind is kBaseline
  int64_t environment_id = 0;
  EvaluationKind kind = EvaluationKind::kCandidate;
  std::string device;     // "cuda:0", "cpu"
  std::string precision;  // "fp32", "tf32", "bf16"
  std::string mode;       // "strict", "partial"
  std::string verdict;       // "accepted", "rejected_hack(input_mutation)", ...
  std::string verdict_kind;  // "accepted", "compile_error", ..., "infra_error"
  std::optional<std::string> check_name;
  std::string message;
  std::optional<double> speedup;
  std::optional<double> candidate_ms;
  std::optional<double> reference_ms;
  double duration_s = 0;
  Json evidence = Json::object();
  std::vector<MeasurementRecord> measurements;
};

// What identifies an evaluation's result for re-use: the same task, candidate, environment and
// settings give the same verdict.
struct EvaluationKey {
  std::string task_hash;
  std::optional<std::string> candidate_hash;  // absent for a baseline
  int64_t environment_id = 0;
  std::string device;
  std::string precision;
  std::string mode;
};

// One line of a listing: an evaluation without its evidence and measurements.
struct EvaluationSummary {
  int64_t id = 0;
  std::string created_at;
  std::string task_name;
  std::string task_hash;
  std::optional<std::string> candidate_hash;
  EvaluationKind kind = EvaluationKind::kCandidate;
  std::string device;
  std::string precision;
  std::string mode;
  std::string verdict;
  std::string verdict_kind;
  std::optional<std::string> check_name;
  std::optional<double> speedup;
  std::optional<double> candidate_ms;
  std::optional<double> reference_ms;
  double duration_s = 0;
};

struct EvaluationFilter {
  int limit = 20;                  // at most this many, newest first; 0 or less lists all
  std::string task_name_contains;  // empty matches every task
  std::optional<std::string> verdict_kind;
  std::optional<std::string> run_id;
};

// One HTTP attempt of a model call.
struct LlmAttemptRecord {
  int attempt = 1;  // from 1
  int http_status = 0;  // 0: no reply
  std::string outcome;  // "ok", "rate_limited", "timeout", ...
  double seconds = 0;
  double waited_s = 0;  // slept before the next attempt
  bool maybe_billed = false;
  std::string error;
};

struct LlmCallRecord {
  int64_t id = 0;          // set by the store
  std::string created_at;  // set by the store
  std::optional<std::string> run_id;
  std::string provider;
  std::string model;
  std::string prompt;
  std::string reply;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost_usd = 0;
  double latency_s = 0;
  std::string status;  // "ok", "http_429", "timeout", ...
  int64_t estimated_tokens = 0;  // attempts that may be billed without a usage report (an estimate)
  double estimated_cost_usd = 0;
  std::vector<LlmAttemptRecord> attempts;  // every HTTP attempt (none for replays and commands)
};

struct RunRecord {
  std::string id;
  std::string command;
  std::string started_at;                  // set by the store
  std::optional<std::string> finished_at;  // set by the store
  std::string status;                      // "running" until finished
  Json config = Json::object();
};

}  // namespace kforge
