#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "report/text_report.h"

namespace kforge {
namespace {

struct ShowFlags {
  int64_t id = 0;
  int limit = 20;
  std::string task;
  std::string verdict;
  bool json = false;
};

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
  return flags.id > 0 ? ShowOne(*store, flags) : ShowList(*store, flags);
}

}  // namespace

CommandRunner AttachShow(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<ShowFlags>();
  app.add_option("id", flags->id, "an evaluation to show in full; without it, list recent ones");
  app.add_option("--limit", flags->limit, "how many to list")->capture_default_str();
  app.add_option("--task", flags->task, "only tasks whose name contains this");
  app.add_option("--verdict", flags->verdict, "only this verdict kind (accepted, wrong_output, ...)");
  app.add_flag("--json", flags->json, "print JSON");
  return [flags, &common] { return RunShow(*flags, common); };
}

}  // namespace kforge
