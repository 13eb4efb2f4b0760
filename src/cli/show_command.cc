#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "agents/live_status.h"
#include "cli/commands.h"
#include "report/text_report.h"

namespace kforge {
namespace {

struct ShowFlags {
  int64_t id = 0;
  int limit = 20;
  std::string task;
  std::string verdict;
  bool llm = false;     // LLM calls instead of evaluations
  std::string run;      // with --llm: only this run's calls
  bool status = false;  // with --llm --run: the run's live status
  bool json = false;
};

Json LlmCallJson(const LlmCallRecord& call, bool texts) {
  Json json = {{"id", call.id}, {"created_at", call.created_at}, {"run_id", call.run_id ? Json(*call.run_id) : Json()},
               {"provider", call.provider}, {"model", call.model}, {"status", call.status},
               {"prompt_tokens", call.prompt_tokens}, {"completion_tokens", call.completion_tokens},
               {"cost_usd", call.cost_usd}, {"latency_s", call.latency_s},
               {"estimated_tokens", call.estimated_tokens}, {"estimated_cost_usd", call.estimated_cost_usd}};
  if (texts) {
    json["prompt"] = call.prompt;
    json["reply"] = call.reply;
    json["attempts"] = Json::array();
    for (const LlmAttemptRecord& attempt : call.attempts) {
      json["attempts"].push_back({{"attempt", attempt.attempt}, {"http_status", attempt.http_status},
                                  {"outcome", attempt.outcome}, {"seconds", attempt.seconds},
                                  {"waited_s", attempt.waited_s}, {"maybe_billed", attempt.maybe_billed},
                                  {"error", attempt.error}});
    }
  }
  return json;
}

int ShowLlmCall(Store& store, const ShowFlags& flags) {
  auto call = store.GetLlmCall(flags.id);
  if (!call.ok()) return UsageError(call.status().message());
  if (flags.json) {
    std::printf("%s\n", LlmCallJson(*call, true).dump(2).c_str());
    return 0;
  }
  std::printf("LLM call %lld, %s, run %s\n%s %s: %s, %lld+%lld tokens, $%.4f, %.1f s\n",
              static_cast<long long>(call->id), call->created_at.c_str(), call->run_id.value_or("-").c_str(),
              call->provider.c_str(), call->model.c_str(), call->status.c_str(),
              static_cast<long long>(call->prompt_tokens), static_cast<long long>(call->completion_tokens), call->cost_usd,
              call->latency_s);
  for (const LlmAttemptRecord& attempt : call->attempts) {
    std::printf("  attempt %d: %s%s, %.1f s%s%s\n", attempt.attempt, attempt.outcome.c_str(),
                attempt.http_status ? fmt::format(" (HTTP {})", attempt.http_status).c_str() : "", attempt.seconds,
                attempt.waited_s > 0 ? fmt::format(", then waited {:.1f} s", attempt.waited_s).c_str() : "",
                attempt.maybe_billed ? ", may be billed" : "");
  }
  if (call->estimated_tokens > 0) {
    std::printf("  estimated: at most %lld tokens, $%.4f, of attempts that reported no usage\n",
                static_cast<long long>(call->estimated_tokens), call->estimated_cost_usd);
  }
  std::printf("\n== prompt\n%s\n\n== reply\n%s\n", call->prompt.c_str(), call->reply.c_str());
  return 0;
}

int ShowLlmCalls(Store& store, const ShowFlags& flags) {
  auto calls = store.ListLlmCalls(flags.run, flags.limit);
  if (!calls.ok()) return UsageError(calls.status().message());
  if (flags.status) {
    if (flags.run.empty()) return UsageError("--status needs --run RUN");
    auto status = store.GetRunStatus(flags.run);
    if (!status.ok()) return UsageError(status.status().message());
    if (!status->has_value()) return UsageError("run " + flags.run + " has no live status stored");
    std::printf("%s\n", flags.json ? (**status).dump(2).c_str() : RunStatus::FromJson(**status).Words().c_str());
    return 0;
  }
  if (flags.json) {
    Json list = Json::array();
    for (const auto& call : *calls) list.push_back(LlmCallJson(call, false));
    std::printf("%s\n", list.dump(2).c_str());
    return 0;
  }
  std::printf("%-5s %-20s %-28s %-24s %-16s %9s %9s %7s\n", "id", "when", "run", "model", "status", "tokens", "cost",
              "s");
  for (const auto& call : *calls) {
    std::printf("%-5lld %-20s %-28s %-24s %-16s %9lld %9s %7.1f\n", static_cast<long long>(call.id),
                call.created_at.c_str(), call.run_id.value_or("-").c_str(), (call.provider + ":" + call.model).c_str(),
                call.status.c_str(), static_cast<long long>(call.prompt_tokens + call.completion_tokens),
                fmt::format("${:.4f}", call.cost_usd).c_str(), call.latency_s);
  }
  if (calls->empty()) std::printf("(no LLM calls stored%s)\n", flags.run.empty() ? "" : " for that run");
  if (!flags.run.empty()) {
    auto status = store.GetRunStatus(flags.run);
    if (status.ok() && status->has_value()) std::printf("\n%s\n", RunStatus::FromJson(**status).Words().c_str());
  }
  return 0;
}

std::string Optional(const std::optional<double>& value, const char* format) {
  return value ? fmt::format(fmt::runtime(format), *value) : "-";
}

int ShowOne(Store& store, const ShowFlags& flags) {
  auto record = store.GetEvaluation(flags.id);
  if (!record.ok()) return UsageError(record.status().message());
  if (flags.json) {
    std::printf("%s\n", record->evidence.dump(2).c_str());
  } else {
    std::printf("evaluation %lld, %s\n%s", static_cast<long long>(record->id), record->created_at.c_str(),
                FormatEvaluationJson(record->evidence).c_str());
  }
  return 0;
}

int ShowList(Store& store, const ShowFlags& flags) {
  EvaluationFilter filter;
  filter.limit = flags.limit;
  filter.task_name_contains = flags.task;
  if (!flags.verdict.empty()) filter.verdict_kind = flags.verdict;
  auto rows = store.ListEvaluations(filter);
  if (!rows.ok()) return UsageError(rows.status().message());
  if (flags.json) {
    Json list = Json::array();
    for (const auto& row : *rows) {
      list.push_back({{"id", row.id}, {"created_at", row.created_at}, {"task", row.task_name}, {"verdict", row.verdict},
                      {"device", row.device}, {"speedup", row.speedup ? Json(*row.speedup) : Json()}});
    }
    std::printf("%s\n", list.dump(2).c_str());
    return 0;
  }
  std::printf("%-5s %-20s %-28s %-8s %-34s %9s %11s\n", "id", "when", "task", "device", "verdict", "speedup", "cand ms");
  for (const auto& row : *rows) {
    std::printf("%-5lld %-20s %-28s %-8s %-34s %9s %11s\n", static_cast<long long>(row.id), row.created_at.c_str(),
                row.task_name.c_str(), row.device.c_str(), row.verdict.c_str(), Optional(row.speedup, "{:.2f}x").c_str(),
                Optional(row.candidate_ms, "{:.4f}").c_str());
  }
  if (rows->empty()) std::printf("(no evaluations stored yet)\n");
  return 0;
}

int RunShow(const ShowFlags& flags, const CommonOptions& common) {
  auto workspace = Workspace::Open(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  Store* store = (*workspace)->store();
  if (!store) return UsageError("the workspace's store could not be opened");
  if (flags.llm) return flags.id > 0 ? ShowLlmCall(*store, flags) : ShowLlmCalls(*store, flags);
  return flags.id > 0 ? ShowOne(*store, flags) : ShowList(*store, flags);
}

}  // namespace

CommandRunner AttachShow(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<ShowFlags>();
  app.add_option("id", flags->id, "an evaluation (or, with --llm, a model call) to show in full; without it, list recent ones");
  app.add_flag("--llm", flags->llm, "model calls (prompt, reply, tokens, cost, latency) instead of evaluations");
  app.add_option("--run", flags->run, "with --llm: only the calls of this run (report.json's llm.run_id)");
  app.add_flag("--status", flags->status,
               "with --llm --run RUN: the run's live status (calls in flight, retry waits, best so far, spend, time "
               "left), as the running stage keeps it");
  app.add_option("--limit", flags->limit, "how many to list")->capture_default_str();
  app.add_option("--task", flags->task, "only tasks whose name contains this");
  app.add_option("--verdict", flags->verdict, "only this verdict kind (accepted, wrong_output, ...)");
  app.add_flag("--json", flags->json, "print JSON");
  return [flags, &common] { return RunShow(*flags, common); };
}

}  // namespace kforge
