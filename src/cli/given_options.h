// The options a command line gave, as arguments that give them again: how `bench --gpus` and
// `bench --slurm` start further kforge processes with the user's own flags. Wiring only.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace kforge {

// Every non-positional option of `app` given on the command line, except those named in
// `leave_out` ("--gpus"), in the order `app` declares them: a flag once per time it was given,
// an option with its value each time. Not those of `app`'s parent or subcommands.
std::vector<std::string> GivenOptions(const CLI::App& app, const std::set<std::string>& leave_out);

}  // namespace kforge
