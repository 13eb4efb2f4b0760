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
    if (op == "time_reference") return Status::Internal("a compile ahead timed something");
    if (op == "compile_reference") {
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

// A store that holds the torch.compile timing of the tasks named in `stored`, and nothing else.
class StoredFor : public BaselineSource {
 public:
  explicit StoredFor(std::vector<std::string> stored) : stored_(std::move(stored)) {}
  std::optional<Json> Find(const BaselineKey& key) override {
    if (key.mode != "compile" || std::find(stored_.begin(), stored_.end(), key.task_hash) == stored_.end()) return std::nullopt;
    return Json{{"samples_ms", {1.0, 1.1}}, {"iteration_ms", {1.2, 1.3}}, {"compile_s", 20.0}, {"meaningful", true}};
  }
  void Keep(const BaselineKey&, const Json&) override {}

 private:
  std::vector<std::string> stored_;
};

// A set of compiling workers that counts how many of its kind are alive.
class CountedWorkers : public CompilingWorkers {
 public:
  CountedWorkers(Rendezvous& shared, int& alive) : CompilingWorkers(shared), alive_(alive) { ++alive_; }
  ~CountedWorkers() override { --alive_; }

 private:
  int& alive_;
};

TEST(ReferenceCompilesTest, CompilesAheadOnlyWhatTheStoreLacksAndEndsItsWorkersBeforeReturning) {
  const fs::path root = *MakeTempDir(fs::temp_directory_path(), "kforge-compile-ahead-");
  std::vector<TaskFile> tasks;
  for (const char* name : {"a", "b", "c"}) {
    TaskFile task;
    task.name = std::string("level3/") + name;
    task.path = root / (std::string(name) + ".py");
    task.hash = name;
    tasks.push_back(task);
  }
  StoredFor store({"b"});
  EvalOptions options;
  options.exchange_root = root / "exchange";
  options.baselines = &store;
  options.baseline_environment = "{\"gpu\":\"test\"}";
  Rendezvous shared;
  shared.slots = 2;
  CompilingWorkers unused(shared);
  Evaluator evaluator(unused, options);
  int alive = 0;
  int sets_made = 0;
  auto make_sets = [&](int count) {
    sets_made += count;
    std::vector<std::unique_ptr<WorkerSource>> sets;
    for (int i = 0; i < count; ++i) sets.push_back(std::make_unique<CountedWorkers>(shared, alive));
    return sets;
  };
  std::vector<ReferenceCompile> compiled = CompileAhead(tasks, evaluator, 8, make_sets);
  ASSERT_EQ(compiled.size(), 2u);
  EXPECT_EQ(compiled[0].task, "level3/a");
  EXPECT_EQ(compiled[1].task, "level3/c");
  EXPECT_EQ(sets_made, 2);  // no more sets than tasks to compile
  EXPECT_EQ(alive, 0);      // every set's workers gone before anything could be timed
  EXPECT_TRUE(shared.all_met);

  // One set, or one task left to compile, compiles nothing ahead: its timing compiles it.
  EXPECT_TRUE(CompileAhead(tasks, evaluator, 1, make_sets).empty());
  StoredFor most({"a", "b"});
  options.baselines = &most;
  Evaluator mostly_stored(unused, options);
  EXPECT_TRUE(CompileAhead(tasks, mostly_stored, 8, make_sets).empty());
  EXPECT_EQ(sets_made, 2);
  RemoveTreeQuietly(root);
}

}  // namespace
}  // namespace kforge
