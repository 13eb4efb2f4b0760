#include "tasks/task.h"

#include <algorithm>
#include <regex>

#include "core/files.h"
#include "core/hash.h"

namespace kforge {
namespace {

bool DefinesModel(const std::string& source) {
  static const std::regex kModelClass(R"((^|\n)class\s+Model\s*[\(:])");
  return std::regex_search(source, kModelClass);
}

}  // namespace

Result<TaskFile> ReadTaskFile(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::NotFound(path.string() + ": no such task file");
  if (path.extension() != ".py") return Status::InvalidArgument(path.string() + ": a task is a .py file");
  ASSIGN_OR_RETURN(std::string source, ReadFile(path));
  if (!DefinesModel(source)) {
    return Status::InvalidArgument(path.string() + ": not a KernelBench task (no `class Model` at top level)");
  }
  TaskFile task;
  task.path = fs::absolute(path, ec).lexically_normal();
  task.name = task.path.parent_path().filename().string() + "/" + task.path.stem().string();
  task.source = std::move(source);
  task.hash = Sha256Hex(task.source);
  return task;
}

Result<std::vector<TaskFile>> FindTasks(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound(dir.string() + ": no such folder");
  std::vector<fs::path> paths;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".py") paths.push_back(it->path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<TaskFile> tasks;
  for (const auto& path : paths) {
    auto task = ReadTaskFile(path);
    if (task.ok()) tasks.push_back(std::move(task).value());
  }
  return tasks;
}

}  // namespace kforge
