#include "search/reference_compiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "core/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// What the slots' workers saw, together: each slot's first prepare waits (up to 10 s) until every
// slot has begun one, so a run that compiled one task at a time would not see them all begin.
struct Rendezvous {
  std::mutex mutex;
  std::condition_variable changed;
  int begun = 0;
  int slots = 0;
  bool all_met = false;
  std::vector<std::string> compiled;  // task paths, as compiled
};

// A trusted worker whose compiles take no time; the task named "broken" fails to compile.
class CompilingWorker : public WorkerClient {
 public:
  explicit CompilingWorker(Rendezvous& shared) : shared_(shared) {}
  Result<Json> Call(const std::string& op, const Json& fields, double) override {
    if (op == "prepare") {
      task_path_ = fields["task_path"].get<std::string>();
      if (first_) {
        first_ = false;
        std::unique_lock<std::mutex> lock(shared_.mutex);
        ++shared_.begun;
        shared_.changed.notify_all();
        if (shared_.changed.wait_for(lock, std::chrono::seconds(10), [&] { return shared_.begun >= shared_.slots; })) shared_.all_met = true;
      }
      return Json{{"sets", Json::array({{{"name", "timing"}, {"file", "t.pt"}}})}, {"outputs", Json::array()}, {"flops", 0},
                  {"input_bytes", 16}, {"output_bytes", 16}, {"parameter_bytes", 0}, {"mutated_buffers", Json::array()},
                  {"second_size", {{"grown_inputs", Json::array()}, {"leading_dim", nullptr}}}, {"cpu_sizes_applied", true},
                  {"memory", {{"fits", true}}}, {"state", Json::object()}, {"shared", Json::object()}};
    }
    if (op == "time_reference") {
      if (!fields.value("compile_only", false)) return Status::Internal("a compile ahead timed something");
      if (fs::path(task_path_).stem() == "broken") return Status::Internal("inductor failed");
      std::lock_guard<std::mutex> lock(shared_.mutex);
      shared_.compiled.push_back(task_path_);
      return Json{{"compile_s", 3.0}, {"mode", "compile"}};
    }
    if (op == "release") return Json::object();
    return Status::Internal("unexpected " + op);
  }

 private:
  Rendezvous& shared_;
  std::string task_path_;
  bool first_ = true;
};

class CompilingWorkers : public WorkerSource {
 public:
  explicit CompilingWorkers(Rendezvous& shared) : worker_(shared) {}
  Result<WorkerClient*> Trusted() override { return static_cast<WorkerClient*>(&worker_); }
  Result<WorkerClient*> Zygote() override { return Status::Internal("compiling ahead runs no candidate"); }

 private:
  CompilingWorker worker_;
};

TEST(ReferenceCompilesTest, EveryTaskIsCompiledOnceWithTheSlotsAtWorkTogether) {
  const fs::path root = *MakeTempDir(fs::temp_directory_path(), "kforge-reference-compiles-");
  std::vector<TaskFile> tasks;
  for (const char* name : {"a", "b", "broken", "c", "d"}) {
    TaskFile task;
    task.name = std::string("level3/") + name;
    task.path = root / (std::string(name) + ".py");
    task.hash = name;
    tasks.push_back(task);
  }
  Rendezvous shared;
  shared.slots = 2;
  CompilingWorkers first(shared), second(shared);
  EvalOptions options;
  options.exchange_root = root / "exchange";
  std::vector<std::string> reported;
  std::vector<ReferenceCompile> compiled =
      CompileReferences(tasks, {&first, &second}, options, [&](const ReferenceCompile& entry) { reported.push_back(entry.task); });
  ASSERT_EQ(compiled.size(), tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(compiled[i].task, tasks[i].name);
    if (tasks[i].hash == "broken") {
      EXPECT_NE(compiled[i].status.message().find("inductor failed"), std::string::npos);
    } else {
      EXPECT_TRUE(compiled[i].status.ok()) << compiled[i].status.ToString();
      EXPECT_DOUBLE_EQ(compiled[i].compile_s, 3.0);
    }
  }
  EXPECT_TRUE(shared.all_met);
  EXPECT_EQ(shared.compiled.size(), 4u);
  std::sort(shared.compiled.begin(), shared.compiled.end());
  EXPECT_EQ(std::unique(shared.compiled.begin(), shared.compiled.end()), shared.compiled.end());
  EXPECT_EQ(reported.size(), tasks.size());
  RemoveTreeQuietly(root);
}

}  // namespace
}  // namespace kforge
