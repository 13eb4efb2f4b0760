#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/files.h"
#include "report/bench_row.h"
#include "report/html_report.h"
#include "report/llm_run.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

struct ReportFlags {
  std::vector<std::string> paths;
  std::string run;
  std::string out;
};

// A task's report.json: the file itself, or a folder holding one (and no bench summary).
std::optional<fs::path> TaskReportAt(const fs::path& path) {
  if (fs::is_regular_file(path) && path.filename() == "report.json") return path;
  if (fs::is_directory(path) && fs::is_regular_file(path / "report.json") && !fs::exists(path / "bench.json")) {
    return path / "report.json";
  }
  return std::nullopt;
}

Result<std::string> TaskPage(const fs::path& report_path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(report_path));
  ASSIGN_OR_RETURN(Json report, ParseJson(text, report_path.string()));
  if (!report.is_object() || !report.contains("task")) {
    return Status::InvalidArgument(report_path.string() + " is not a task report (no \"task\")");
  }
  // The generated source beside the report (the path recorded in it may be on another machine).
  std::string model_new;
  for (const fs::path& candidate : {report_path.parent_path() / "model_new.py", fs::path(JsonGet<std::string>(report, "model_new", ""))}) {
    if (auto source = ReadFile(candidate); !candidate.empty() && source.ok()) {
      model_new = *source;
      break;
    }
  }
  return TaskReportHtml(report, model_new);
}

// Each task report under a bench folder gets its page beside it (report.html), linked from the
// bench page by a relative path; the map is keyed by task name.
std::map<std::string, std::string> WriteTaskPages(const fs::path& folder, const fs::path& page_dir) {
  std::map<std::string, std::string> links;
  for (const TaskReportFile& file : TaskReportsUnder(folder)) {
    auto page = TaskPage(file.path);
    if (!page.ok()) continue;
    const fs::path html = file.path.parent_path() / "report.html";
    if (!WriteFile(html, *page).ok()) continue;
    links[JsonGet<std::string>(file.report, "task", "")] = fs::relative(html, page_dir).string();
  }
  return links;
}

Status Run(const ReportFlags& flags, const CommonOptions& common) {
  std::string html;
  fs::path out = flags.out;
  if (!flags.run.empty()) {
    if (!flags.paths.empty()) return Status::InvalidArgument("--run takes no PATH: give one or the other");
    ASSIGN_OR_RETURN(std::unique_ptr<Workspace> workspace, Workspace::Open(common));
    ASSIGN_OR_RETURN(LlmRunView run, LoadLlmRun(*workspace->store(), flags.run));
    html = LlmRunReportHtml(run);
    if (out.empty()) out = "report-" + flags.run + ".html";
  } else if (flags.paths.size() == 2) {
    ASSIGN_OR_RETURN(BenchRun before, LoadBenchRun(flags.paths[0]));
    ASSIGN_OR_RETURN(BenchRun after, LoadBenchRun(flags.paths[1]));
    html = CompareReportHtml(before, after);
    if (out.empty()) out = "compare.html";
  } else if (flags.paths.size() == 1) {
    const fs::path path = flags.paths[0];
    if (auto task = TaskReportAt(path)) {
      ASSIGN_OR_RETURN(html, TaskPage(*task));
      if (out.empty()) out = task->parent_path() / "report.html";
    } else {
      ASSIGN_OR_RETURN(BenchRun run, LoadBenchRun(path));
      if (out.empty()) out = fs::is_directory(path) ? path / "report.html" : fs::path(path).replace_extension(".html");
      ReportLinks links;
      if (fs::is_directory(path)) {
        auto pages = std::make_shared<std::map<std::string, std::string>>(WriteTaskPages(path, fs::absolute(out).parent_path()));
        links.task_href = [pages](const BenchRow& row) {
          auto it = pages->find(row.task);
          return it == pages->end() ? std::string() : it->second;
        };
      }
      html = BenchReportHtml(run, links);
    }
  } else {
    return Status::InvalidArgument("give a bench folder (or its bench.json), a task's folder or report.json, two bench "
                                   "runs to compare, or --run RUN_ID");
  }
  std::error_code ec;
  if (out.has_parent_path()) fs::create_directories(out.parent_path(), ec);
  RETURN_IF_ERROR(WriteFile(out, html));
  std::printf("wrote %s\n", out.string().c_str());
  return Status::Ok();
}

}  // namespace

CommandRunner AttachReport(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<ReportFlags>();
  app.add_option("path", flags->paths,
                 "a bench folder or bench.json (two: compare them), or a task's folder or report.json")
      ->expected(0, 2);
  app.add_option("--run", flags->run, "an LLM run in the store (its id, as `kforge show --llm` lists them)");
  app.add_option("-o,--out", flags->out,
                 "the HTML file to write (default: report.html in the folder, compare.html, or report-RUN.html)");
  return [flags, &common] {
    Status status = Run(*flags, common);
    return status.ok() ? 0 : UsageError(status.message());
  };
}

}  // namespace kforge
