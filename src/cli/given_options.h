// The options a command line gave, as arguments that give them again: how `bench --gpus` and
// `bench --slurm` start further kforge processes with the user's own flags. Wiring only.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/workspace.h"

namespace kforge {

// Every non-positional option of `app` given on the command line, except those named in
// `leave_out` ("--gpus"), in the order `app` declares them: a flag once per time it was given,
// an option with its value each time. Not those of `app`'s parent or subcommands.
std::vector<std::string> GivenOptions(const CLI::App& app, const std::set<std::string>& leave_out);

// `environment` as "NAME=value" entries.
std::vector<std::string> AsEnvironmentList(const std::map<std::string, std::string>& environment);

// The interpreter the workers would use here, as an absolute path (jobs on other nodes must not
// depend on the PATH they land on).
std::string AbsolutePython(const CommonOptions& common, const std::map<std::string, std::string>& environment);

}  // namespace kforge
