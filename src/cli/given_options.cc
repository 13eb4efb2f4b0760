#include "cli/given_options.h"

#include <filesystem>

#include "sandbox/environment.h"
#include "sandbox/subprocess.h"

namespace kforge {

std::vector<std::string> GivenOptions(const CLI::App& app, const std::set<std::string>& leave_out) {
  std::vector<std::string> arguments;
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional() || option->count() == 0) continue;
    const std::string name = option->get_name();
    if (name == "--help" || name == "--version" || leave_out.count(name) > 0) continue;
    if (option->get_expected_max() == 0) {  // a flag: its results are what it set, not words given
      for (size_t i = 0; i < option->count(); ++i) arguments.push_back(name);
      continue;
    }
    for (const std::string& value : option->results()) {
      // "--name=value": a value that starts with '-' (an sbatch argument) stays the option's.
      arguments.push_back(name + "=" + value);
    }
  }
  return arguments;
}

std::vector<std::string> AsEnvironmentList(const std::map<std::string, std::string>& environment) {
  std::vector<std::string> list;
  for (const auto& [name, value] : environment) list.push_back(name + "=" + value);
  return list;
}

namespace fs = std::filesystem;

std::string AbsolutePython(const CommonOptions& common, const std::map<std::string, std::string>& environment) {
  const std::string python = FindPython(common.python, environment);
  if (python.find('/') != std::string::npos) return fs::absolute(python).lexically_normal().string();
  auto found = FindProgram(python, AsEnvironmentList(environment));
  return found.ok() ? *found : python;
}

}  // namespace kforge
