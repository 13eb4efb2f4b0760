#include "search/bench_claims.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

class BenchClaimsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(fs::temp_directory_path(), "kforge-claims-test-");
    ASSERT_TRUE(dir.ok());
    out_ = *dir;
    scope_ = ClaimsScope(out_, 1, 1);
  }
  void TearDown() override { RemoveTreeQuietly(out_); }

  fs::path out_, scope_;
};

TEST_F(BenchClaimsTest, ScopesAreTheWholeSuiteOrOneShard) {
  EXPECT_EQ(ClaimsScope("/o", 1, 1), fs::path("/o/.claims/all"));
  EXPECT_EQ(ClaimsScope("/o", 2, 3), fs::path("/o/.claims/shard-2-of-3"));
}

TEST_F(BenchClaimsTest, TaskNamesMakeFileNamesAndBack) {
  for (const std::string task : {"level1/01_relu", "a%2Fb/c", "plain", "x%y/z%"}) {
    EXPECT_EQ(ClaimFileStem(task).find('/'), std::string::npos) << task;
    EXPECT_EQ(TaskOfClaimFileStem(ClaimFileStem(task)), task);
  }
  EXPECT_NE(ClaimFileStem("a/b"), ClaimFileStem("a%2Fb"));
}

TEST_F(BenchClaimsTest, TheFirstClaimWinsAndDoneIsSeen) {
  TaskClaims one(scope_, "run-1"), other_worker(scope_, "run-1");
  EXPECT_TRUE(*one.Claim("level1/a"));
  EXPECT_FALSE(*other_worker.Claim("level1/a"));
  EXPECT_TRUE(*other_worker.Claim("level1/b"));
  ASSERT_TRUE(one.MarkDone("level1/a").ok());
  const TaskClaims::Snapshot snapshot = one.Scan();
  EXPECT_EQ(snapshot.claimed, (std::vector<std::string>{"level1/a", "level1/b"}));
  EXPECT_EQ(snapshot.done, (std::vector<std::string>{"level1/a"}));
  EXPECT_NE(ReadFile(one.folder() / (ClaimFileStem("level1/a") + ".claim"))->find("run run-1 pid "), std::string::npos);
}

// Many processes claim the same tasks at once: each task goes to exactly one.
TEST_F(BenchClaimsTest, ConcurrentWorkersNeverClaimATaskTwice) {
  constexpr int kWorkers = 6, kTasks = 40;
  std::vector<pid_t> children;
  for (int worker = 0; worker < kWorkers; ++worker) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      TaskClaims claims(scope_, "run-1");
      std::string won;
      for (int task = 0; task < kTasks; ++task) {
        auto claimed = claims.Claim(fmt::format("level1/{:02}", task));
        if (!claimed.ok()) _exit(3);
        if (*claimed) won += fmt::format("level1/{:02}\n", task);
      }
      _exit(WriteFile(out_ / fmt::format("won-{}", worker), won).ok() ? 0 : 4);
    }
    children.push_back(pid);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::map<std::string, int> winners;
  for (int worker = 0; worker < kWorkers; ++worker) {
    std::istringstream won(*ReadFile(out_ / fmt::format("won-{}", worker)));
    for (std::string task; std::getline(won, task);) ++winners[task];
  }
  ASSERT_EQ(winners.size(), static_cast<size_t>(kTasks));
  for (const auto& [task, count] : winners) EXPECT_EQ(count, 1) << task;
}

TEST_F(BenchClaimsTest, ClaimsOfAnInterruptedRunAreSweptAndNotHonoured) {
  TaskClaims interrupted(scope_, "run-old");
  ASSERT_TRUE(*interrupted.Claim("level1/a"));
  auto lock = ClaimsLock::Acquire(scope_, "run-new");
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  EXPECT_FALSE(fs::exists(interrupted.folder()));
  TaskClaims resumed(scope_, "run-new");
  EXPECT_TRUE(*resumed.Claim("level1/a"));
}

TEST_F(BenchClaimsTest, TheLockKeepsASecondRunOutWhileTheFirstLives) {
  auto first = ClaimsLock::Acquire(scope_, "run-1");
  ASSERT_TRUE(first.ok());
  TaskClaims running(scope_, "run-1");
  ASSERT_TRUE(*running.Claim("level1/a"));
  auto second = ClaimsLock::Acquire(scope_, "run-2");
  EXPECT_EQ(second.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(second.status().message().find("another kforge bench"), std::string::npos);
  EXPECT_TRUE(fs::exists(running.folder()));  // the refused run swept nothing
  first->reset();
  EXPECT_TRUE(ClaimsLock::Acquire(scope_, "run-2").ok());
}

TEST_F(BenchClaimsTest, ALockDiesWithItsProcess) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto lock = ClaimsLock::Acquire(scope_, "run-killed");
    if (!lock.ok()) _exit(3);
    lock->release();  // never unlocked by hand: the process just ends
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(ClaimsLock::Acquire(scope_, "run-next").ok());
}

TEST(BenchRunIdTest, NamesTheTimeAndTheProcess) {
  const std::string id = NewBenchRunId();
  EXPECT_NE(id.find(fmt::format("-{}", getpid())), std::string::npos) << id;
  EXPECT_EQ(id.size(), 16 + std::to_string(getpid()).size()) << id;  // 20261204T185548-PID
}

}  // namespace
}  // namespace kforge
