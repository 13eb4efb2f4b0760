#include "report/attempt_export.h"

#include <filesystem>
#include <map>
#include <set>

#include "core/files.h"
#include "core/hash.h"
#include "core/json.h"
#include "report/llm_run.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

std::string FileText(const fs::path& path) {
  auto text = ReadFile(path);
  return text.ok() ? *text : std::string();
}

Json TextOrNull(const fs::path& path) {
  auto text = ReadFile(path);
  return text.ok() ? Json(*text) : Json();
}

void WriteLine(std::ostream& out, const Json& line) {
  out << line.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
}

// The task a stage folder was run on (stage.json names its file), as the line's task fields.
Json StageTask(const fs::path& folder) {
  auto stage = ParseJson(FileText(folder / "stage.json"), "stage.json");
  if (!stage.ok()) return {{"task_name", nullptr}, {"task_hash", nullptr}, {"task_source", nullptr}};
  const fs::path task = JsonGet<std::string>(*stage, "task", "");
  auto source = ReadFile(task);
  return {{"task_name", task.stem().string()},
          {"task_hash", source.ok() ? Json(Sha256Hex(*source)) : Json()},
          {"task_source", source.ok() ? Json(*source) : Json()},
          {"precision", JsonField(*stage, "precision")},
          {"mode", JsonField(*stage, "mode")}};
}

// One "llm" line per round folder (a verdict.json) under a stage folder.
void ExportRun(const RunRecord& run, const fs::path& folder, const ExportOptions& options,
               const std::map<std::string, EvaluationSummary>& by_candidate, std::set<std::string>& covered,
               std::ostream& out, ExportCounts& counts) {
  const Json task = StageTask(folder);
  for (const RoundFolder& found : RoundFoldersUnder(folder)) {
    const fs::path& round = found.path;
    auto verdict = ParseJson(FileText(round / "verdict.json"), "verdict.json");
    if (!verdict.ok()) continue;
    const Json& attempt = JsonField(*verdict, "attempt");
    const Json candidate = TextOrNull(round / "candidate.py");
    const bool accepted = JsonGet<std::string>(attempt, "verdict_kind", "") == "accepted";
    if (options.accepted_only && !accepted) continue;
    Json line = task;
    line["kind"] = "llm";
    line["run_id"] = run.id;
    line["model"] = JsonField(run.config, "llm");
    line["scope"] = found.scope;
    for (const char* key : {"writer", "round", "prompt", "verdict", "verdict_kind", "message", "speedup", "prompt_tokens",
                            "completion_tokens", "cost_usd"}) {
      line[key] = JsonField(attempt, key);
    }
    line["prompt_kind"] = line["prompt"];
    line["prompt"] = TextOrNull(round / "prompt.md");
    line["reply"] = TextOrNull(round / "reply.md");
    line["feedback"] = TextOrNull(round / "feedback.md");
    line["candidate"] = candidate;
    line["accepted"] = accepted;
    line["candidate_hash"] = nullptr;
    line["evaluation_id"] = nullptr;
    if (candidate.is_string()) {
      const std::string hash = Sha256Hex(candidate.get<std::string>());
      line["candidate_hash"] = hash;
      covered.insert(hash);
      if (auto it = by_candidate.find(hash); it != by_candidate.end()) {
        line["evaluation_id"] = it->second.id;
        line["device"] = it->second.device;
      }
    }
    WriteLine(out, line);
    ++counts.llm;
  }
}

Json EvaluationLine(Store& store, const EvaluationSummary& summary) {
  Json line = {{"kind", "evaluation"}, {"evaluation_id", summary.id}, {"created_at", summary.created_at},
               {"task_name", summary.task_name}, {"task_hash", summary.task_hash}, {"device", summary.device},
               {"precision", summary.precision}, {"mode", summary.mode}, {"verdict", summary.verdict},
               {"verdict_kind", summary.verdict_kind}, {"accepted", summary.verdict_kind == "accepted"},
               {"speedup", JsonOrNull(summary.speedup)}, {"candidate_ms", JsonOrNull(summary.candidate_ms)},
               {"reference_ms", JsonOrNull(summary.reference_ms)}, {"candidate_hash", *summary.candidate_hash}};
  auto task = store.GetTask(summary.task_hash);
  line["task_source"] = task.ok() ? Json(task->source) : Json();
  auto candidate = store.GetCandidate(*summary.candidate_hash);
  line["candidate"] = candidate.ok() ? Json(candidate->source) : Json();
  line["origin"] = candidate.ok() ? Json(candidate->origin) : Json();
  return line;
}

}  // namespace

Result<ExportCounts> ExportAttempts(Store& store, const ExportOptions& options, std::ostream& out) {
  ExportCounts counts;
  EvaluationFilter all;
  all.limit = 0;
  ASSIGN_OR_RETURN(std::vector<EvaluationSummary> evaluations, store.ListEvaluations(all));
  std::map<std::string, EvaluationSummary> by_candidate;  // the newest evaluation of each candidate
  for (const EvaluationSummary& summary : evaluations) {
    if (summary.candidate_hash && !by_candidate.count(*summary.candidate_hash)) by_candidate.emplace(*summary.candidate_hash, summary);
  }
  std::set<std::string> covered;
  if (options.llm) {
    ASSIGN_OR_RETURN(std::vector<RunRecord> runs, store.ListRuns(0));
    std::set<std::string> wanted(options.runs.begin(), options.runs.end());
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {  // oldest first
      if (!wanted.empty() && !wanted.count(it->id)) continue;
      wanted.erase(it->id);
      const fs::path folder = JsonGet<std::string>(it->config, "folder", "");
      if (folder.empty() || !fs::is_directory(folder)) {
        ++counts.runs_without_folder;
        continue;
      }
      ExportRun(*it, folder, options, by_candidate, covered, out, counts);
    }
    if (!wanted.empty()) return Status::NotFound("no run " + *wanted.begin() + " in the store (kforge show lists them)");
  }
  if (options.evaluations && options.runs.empty()) {
    for (auto it = evaluations.rbegin(); it != evaluations.rend(); ++it) {  // oldest first
      if (it->kind != EvaluationKind::kCandidate || !it->candidate_hash || covered.count(*it->candidate_hash)) continue;
      if (options.accepted_only && it->verdict_kind != "accepted") continue;
      WriteLine(out, EvaluationLine(store, *it));
      ++counts.evaluations;
    }
  }
  out.flush();
  if (!out) return Status::IoError("the export could not be written completely");
  return counts;
}

}  // namespace kforge
