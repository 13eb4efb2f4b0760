#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/log.h"
#include "report/attempt_export.h"

namespace kforge {
namespace {

struct ExportFlags {
  std::string out = "-";
  std::string only = "all";  // all | llm | evaluations
  ExportOptions options;
};

int RunExport(ExportFlags flags, const CommonOptions& common) {
  if (flags.only != "all" && flags.only != "llm" && flags.only != "evaluations") {
    return UsageError("--only must be all, llm or evaluations");
  }
  flags.options.llm = flags.only != "evaluations";
  flags.options.evaluations = flags.only != "llm";
  auto workspace = Workspace::Open(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  std::ofstream file;
  const std::string partial = flags.out + ".partial";
  if (flags.out != "-") {
    file.open(partial, std::ios::binary | std::ios::trunc);
    if (!file) return UsageError("cannot write " + partial);
  }
  std::ostream& out = flags.out == "-" ? std::cout : file;
  auto counts = ExportAttempts(*(*workspace)->store(), flags.options, out);
  if (!counts.ok()) {
    if (flags.out != "-") std::remove(partial.c_str());
    return UsageError(counts.status().message());
  }
  if (flags.out != "-") {
    file.close();
    // Written whole, then renamed: an existing dataset is never left half-replaced.
    if (!file || std::rename(partial.c_str(), flags.out.c_str()) != 0) return UsageError("cannot write " + flags.out);
  }
  if (!common.quiet) {
    LogInfo("exported {} LLM attempt(s) and {} other evaluation(s){}{}", counts->llm, counts->evaluations,
            flags.out == "-" ? "" : " to " + flags.out,
            counts->runs_without_folder > 0
                ? " (" + std::to_string(counts->runs_without_folder) + " run(s) skipped: their stage folder is gone)"
                : "");
  }
  return 0;
}

}  // namespace

CommandRunner AttachExport(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<ExportFlags>();
  app.add_option("-o,--out", flags->out, "JSONL file to write ('-': standard output)")->capture_default_str();
  app.add_option("--only", flags->only,
                 "llm: model calls of LLM stages (prompt, reply, candidate, verdict); evaluations: other stored "
                 "evaluations (eval, the service, the compiler); all: both")
      ->capture_default_str();
  app.add_option("--run", flags->options.runs, "only this LLM run (repeat for several; kforge show lists runs)");
  app.add_flag("--accepted", flags->options.accepted_only, "only attempts whose candidate was accepted");
  return [flags, &common] { return RunExport(*flags, common); };
}

}  // namespace kforge
