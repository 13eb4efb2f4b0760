// The kforge subcommands. Each registers its options on a CLI11 subcommand and returns the
// process exit status from its run function: 0 success (eval: accepted), 1 a rejecting
// verdict, 2 a usage or infrastructure error.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/workspace.h"

namespace kforge {

using CommandRunner = std::function<int()>;

struct Command {
  const char* name;
  const char* description;
  // Adds the command's own options to `app`; returns what runs it.
  std::function<CommandRunner(CLI::App& app, const CommonOptions& common)> attach;
};

CommandRunner AttachEval(CLI::App& app, const CommonOptions& common);
CommandRunner AttachBaseline(CLI::App& app, const CommonOptions& common);
CommandRunner AttachShow(CLI::App& app, const CommonOptions& common);
CommandRunner AttachIr(CLI::App& app, const CommonOptions& common);
CommandRunner AttachOptimize(CLI::App& app, const CommonOptions& common);
CommandRunner AttachBench(CLI::App& app, const CommonOptions& common);
CommandRunner AttachResume(CLI::App& app, const CommonOptions& common);
CommandRunner AttachReport(CLI::App& app, const CommonOptions& common);
CommandRunner AttachServe(CLI::App& app, const CommonOptions& common);
CommandRunner AttachExport(CLI::App& app, const CommonOptions& common);
CommandRunner AttachWorker(CLI::App& app, const CommonOptions& common);

// Prints a user-facing error and returns 2.
int UsageError(const std::string& message);

}  // namespace kforge
