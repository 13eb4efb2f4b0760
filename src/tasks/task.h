// A task file (KernelBench format: Model, get_inputs, get_init_inputs) as the orchestrator sees
// it: its path, a display name and its source. Whether it really loads is the trusted worker's
// call; this only finds and reads files.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"

namespace kforge {

struct TaskFile {
  std::filesystem::path path;  // absolute
  std::string name;            // "level1/01_relu": parent folder and file stem
  std::string source;
  std::string hash;            // sha256 of source
};

// Reads a task file. NotFound when missing; InvalidArgument when it is not a .py file or
// defines no `class Model`.
Result<TaskFile> ReadTaskFile(const std::filesystem::path& path);

// Every task file under `dir` (recursively), sorted by path: a suite. Files that do not define
// `class Model` are skipped.
Result<std::vector<TaskFile>> FindTasks(const std::filesystem::path& dir);

}  // namespace kforge
