#include "search/bench_workers.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/files.h"
#include "fake_process_runner.h"
#include "store/store.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

TEST(VisibleGpusTest, CudaVisibleDevicesNamesThemWhenSet) {
  FakeProcessRunner runner;
  auto gpus = VisibleGpus({{"CUDA_VISIBLE_DEVICES", "2,3,GPU-1f2e"}}, runner);
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(*gpus, (std::vector<std::string>{"2", "3", "GPU-1f2e"}));
  EXPECT_TRUE(runner.calls().empty());
}

TEST(VisibleGpusTest, ElseNvidiaSmiListsThemWithoutTheirMigDevices) {
  FakeProcessRunner runner;
  runner.Answer(0, "GPU 0: NVIDIA H200 (UUID: GPU-aaaa)\n  MIG 1g.18gb Device 0: (UUID: MIG-bbbb)\n"
                   "GPU 1: NVIDIA H200 (UUID: GPU-cccc)\n");
  auto gpus = VisibleGpus({{"PATH", "/usr/bin"}}, runner);
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(*gpus, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(runner.calls()[0], (std::vector<std::string>{"nvidia-smi", "-L"}));
}

TEST(VisibleGpusTest, NoNvidiaSmiSaysWhatToDo) {
  FakeProcessRunner runner;
  runner.Fail(Status::NotFound("nvidia-smi is not on the PATH (/usr/bin)"));
  auto gpus = VisibleGpus({}, runner);
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gpus.status().message().find("set CUDA_VISIBLE_DEVICES"), std::string::npos);
}

struct CountCase {
  std::string text;
  bool on_cpu;
  int gpus;
  int count;          // 0: an error
  std::string error;  // part of its message
};

class WorkerCountTest : public ::testing::TestWithParam<CountCase> {};

TEST_P(WorkerCountTest, ReadsTheFlag) {
  std::vector<std::string> gpus;
  for (int i = 0; i < GetParam().gpus; ++i) gpus.push_back(std::to_string(i));
  auto count = WorkerCount(GetParam().text, GetParam().on_cpu, gpus);
  if (GetParam().count > 0) {
    ASSERT_TRUE(count.ok()) << count.status().ToString();
    EXPECT_EQ(*count, GetParam().count);
  } else {
    EXPECT_EQ(count.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(count.status().message().find(GetParam().error), std::string::npos) << count.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Flags, WorkerCountTest,
    ::testing::Values(CountCase{"2", true, 0, 2, ""}, CountCase{"3", false, 4, 3, ""}, CountCase{"all", false, 8, 8, ""},
                      CountCase{"all", true, 0, 0, "with --device cpu give the number"},
                      CountCase{"all", false, 0, 0, "shows no GPU"},
                      CountCase{"3", false, 2, 0, "--gpus 3: this machine shows 2 GPU(s) (0,1)"},
                      CountCase{"0", true, 0, 0, "--gpus must be a number"},
                      CountCase{"two", true, 0, 0, "--gpus must be a number"},
                      CountCase{"2x", true, 0, 0, "--gpus must be a number"}));

struct CoresCase {
  std::vector<int> cores;
  int workers;
  std::vector<std::vector<int>> shares;
};

class PartitionCoresTest : public ::testing::TestWithParam<CoresCase> {};

TEST_P(PartitionCoresTest, DealsDisjointRunsOfCores) {
  EXPECT_EQ(PartitionCores(GetParam().cores, GetParam().workers), GetParam().shares);
}

INSTANTIATE_TEST_SUITE_P(
    Machines, PartitionCoresTest,
    ::testing::Values(CoresCase{{0, 1, 2, 3, 4, 5, 6, 7}, 2, {{0, 1, 2, 3}, {4, 5, 6, 7}}},
                      CoresCase{{0, 1, 2, 3, 4}, 2, {{0, 1, 2}, {3, 4}}},
                      CoresCase{{0, 1, 2, 3, 4, 5, 6}, 3, {{0, 1, 2}, {3, 4}, {5, 6}}},
                      CoresCase{{2, 3, 8, 9}, 2, {{2, 3}, {8, 9}}},  // an affinity mask with holes
                      CoresCase{{0, 1}, 1, {{0, 1}}},
                      CoresCase{{0, 1}, 3, {{0}, {1}, {0}}}));  // fewer cores than workers: shared

TEST(PlanBenchWorkersTest, EachWorkerSeesItsGpuOnlyAndLogsApart) {
  const auto workers = PlanBenchWorkers({"/bin/kforge", "bench", "suite"}, {"PATH=/bin", "CUDA_VISIBLE_DEVICES=4,5"},
                                        {"4", "5"}, {{0, 1}, {2, 3}}, "/out/workers");
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(workers[1].argv, (std::vector<std::string>{"/bin/kforge", "bench", "suite"}));
  EXPECT_EQ(workers[0].environment, (std::vector<std::string>{"PATH=/bin", "CUDA_VISIBLE_DEVICES=4"}));
  EXPECT_EQ(workers[1].environment, (std::vector<std::string>{"PATH=/bin", "CUDA_VISIBLE_DEVICES=5"}));
  EXPECT_EQ(workers[1].cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(workers[1].log, fs::path("/out/workers/worker-2.log"));
  EXPECT_EQ(workers[1].gpu, "5");
  // On the CPU the environment is left as it is.
  const auto cpu = PlanBenchWorkers({"k"}, {"CUDA_VISIBLE_DEVICES="}, {}, {{0}, {1}}, "/w");
  EXPECT_EQ(cpu[1].environment, (std::vector<std::string>{"CUDA_VISIBLE_DEVICES="}));
  EXPECT_TRUE(cpu[1].gpu.empty());
}

class RunBenchWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(fs::temp_directory_path(), "kforge-workers-test-");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
  }
  void TearDown() override { RemoveTreeQuietly(dir_); }

  // A worker that plays a bench worker: claims each task it can (noclobber: O_EXCL), works a
  // moment and marks it done, then prints the cores it ran on.
  BenchWorkerSpec ShellWorker(const TaskClaims& claims, const std::vector<std::string>& tasks, int index,
                              const std::vector<int>& cpus) {
    std::string script = "set -C; mkdir -p '" + claims.folder().string() + "'; cd '" + claims.folder().string() + "'; ";
    for (const std::string& task : tasks) {
      const std::string stem = ClaimFileStem(task);
      script += fmt::format("if true 2>/dev/null > '{0}.claim'; then sleep 0.2; : > '{0}.done'; echo ran {1}; fi; ", stem, task);
    }
    script += "grep Cpus_allowed_list /proc/self/status";
    BenchWorkerSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.environment = {"PATH=/usr/bin:/bin"};
    spec.cpus = cpus;
    spec.log = dir_ / fmt::format("worker-{}.log", index);
    return spec;
  }

  fs::path dir_;
};

TEST_F(RunBenchWorkersTest, FollowsTheClaimsUntilEveryWorkerEnds) {
  const TaskClaims claims(ClaimsScope(dir_, 1, 1), "run-1");
  const std::vector<std::string> tasks = {"level1/a", "level1/b", "level2/c", "level2/d", "level3/e"};
  const std::vector<int> cores = AllowedCores();
  std::vector<BenchWorkerSpec> workers;
  for (int i = 0; i < 3; ++i) workers.push_back(ShellWorker(claims, tasks, i, {cores[i % cores.size()]}));
  std::vector<std::string> started, finished;
  std::vector<size_t> ended;
  BenchWorkerEvents events;
  events.started = [&](const std::string& task) { started.push_back(task); };
  events.finished = [&](const std::string& task) {
    EXPECT_NE(std::find(started.begin(), started.end(), task), started.end()) << task << " finished before it started";
    finished.push_back(task);
  };
  events.ended = [&](size_t worker, const ExitStatus& status) {
    EXPECT_TRUE(status.exited && status.code == 0) << status.ToString();
    ended.push_back(worker);
  };
  auto outcome = RunBenchWorkers(workers, claims, events, 0.05);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_FALSE(outcome->interrupted());
  std::sort(started.begin(), started.end());
  std::sort(finished.begin(), finished.end());
  std::sort(ended.begin(), ended.end());
  EXPECT_EQ(started, tasks);
  EXPECT_EQ(finished, tasks);
  EXPECT_EQ(ended, (std::vector<size_t>{0, 1, 2}));
  std::string logs;
  for (int i = 0; i < 3; ++i) {
    const std::string log = *ReadFile(workers[i].log);
    EXPECT_NE(log.find(fmt::format("Cpus_allowed_list:\t{}\n", cores[i % cores.size()])), std::string::npos) << log;
    logs += log;
  }
  for (const std::string& task : tasks) {
    EXPECT_EQ(logs.find("ran " + task + "\n"), logs.rfind("ran " + task + "\n")) << task << " ran twice";
  }
}

TEST_F(RunBenchWorkersTest, ASignalStopsEveryWorker) {
  const TaskClaims claims(ClaimsScope(dir_, 1, 1), "run-1");
  std::vector<BenchWorkerSpec> workers(2);
  for (int i = 0; i < 2; ++i) {
    workers[i].argv = {"/bin/sh", "-c", "sleep 100 & echo $! > " + (dir_ / fmt::format("sleeper-{}", i)).string() + "; wait"};
    workers[i].environment = {"PATH=/usr/bin:/bin"};
    workers[i].log = dir_ / fmt::format("worker-{}.log", i);
  }
  const pthread_t loop_thread = pthread_self();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    pthread_kill(loop_thread, SIGTERM);  // to the thread that blocks it, so it cannot end the test
  });
  auto outcome = RunBenchWorkers(workers, claims, BenchWorkerEvents{}, 0.05);
  stopper.join();
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->signal, SIGTERM);
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(outcome->exits[i].exited);
    const pid_t sleeper = std::stoi(*ReadFile(dir_ / fmt::format("sleeper-{}", i)));
    // The whole group went: the worker's own children too.
    bool gone = false;
    for (int tries = 0; tries < 100 && !gone; ++tries) {
      gone = kill(sleeper, 0) != 0;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(gone) << "the worker's child " << sleeper << " survived";
  }
}

// The workers of one run share the workspace's store: several processes writing to it at once
// lose nothing (SQLite WAL, a busy timeout, write transactions taken at their start).
TEST_F(RunBenchWorkersTest, WorkersShareOneStoreWithoutLosingWrites) {
  const fs::path db = dir_ / "kforge.db";
  ASSERT_TRUE(Store::Open(db).ok());
  constexpr int kProcesses = 4, kWrites = 40;
  std::vector<pid_t> children;
  for (int process = 0; process < kProcesses; ++process) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto store = Store::Open(db);
      if (!store.ok()) _exit(3);
      for (int i = 0; i < kWrites; ++i) {
        const std::string source = fmt::format("candidate {} {}", process, i);
        if (!(*store)->RecordCandidate(source, "test").ok()) _exit(4);
        if (!(*store)->RecordTask(fmt::format("/t/{}-{}.py", process, i), "task", source + " task").ok()) _exit(5);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit " << WEXITSTATUS(status);
  }
  auto store = Store::Open(db);
  ASSERT_TRUE(store.ok());
  for (int process = 0; process < kProcesses; ++process) {
    for (int i = 0; i < kWrites; ++i) {
      auto recorded = (*store)->RecordCandidate(fmt::format("candidate {} {}", process, i), "again");
      ASSERT_TRUE(recorded.ok());
      auto candidate = (*store)->GetCandidate(*recorded);
      ASSERT_TRUE(candidate.ok());
      EXPECT_EQ(candidate->origin, "test");  // recorded by the worker, not now
    }
  }
}

}  // namespace
}  // namespace kforge
