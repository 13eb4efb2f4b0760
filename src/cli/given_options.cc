#include "cli/given_options.h"

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

}  // namespace kforge
