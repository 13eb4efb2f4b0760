#include "agents/candidate_judge.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <utility>

#include "cpu_evaluator.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// An honest ReLU and a memoizing one, each judged from a thread of its own, started together.
std::pair<Result<Evaluation>, Result<Evaluation>> JudgeHonestAndCheatAtOnce(CandidateJudge& judge, const TaskFile& task,
                                                                             const fs::path& corpus) {
  Result<Evaluation> honest = Status::Internal("not run");
  Result<Evaluation> cheat = Status::Internal("not run");
  std::thread first([&] { honest = judge.Judge(task, corpus / "honest_relu.py"); });
  std::thread second([&] { cheat = judge.Judge(task, corpus / "memo_data_ptr.py"); });
  first.join();
  second.join();
  return {std::move(honest), std::move(cheat)};
}

class CandidateJudgeTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = *MakeTempDir(fs::temp_directory_path(), "kforge-judge-test-"); }
  void TearDown() override { RemoveTreeQuietly(root_); }
  fs::path root_;
};

// Workers whose first use throws: stands for any exception escaping the evaluator.
class ThrowingWorkers : public WorkerSource {
 public:
  Result<WorkerClient*> Trusted() override { throw std::runtime_error("worker table corrupted"); }
  Result<WorkerClient*> Zygote() override { throw std::runtime_error("worker table corrupted"); }
};

TEST_F(CandidateJudgeTest, AnExceptionFromTheEvaluatorBecomesAStatus) {
  ThrowingWorkers workers;
  EvalOptions options;
  options.exchange_root = root_ / "exchange";
  Evaluator evaluator(workers, options);
  JudgePool judge({&evaluator});
  ASSERT_TRUE(WriteFile(root_ / "candidate.py", "class ModelNew: pass\n").ok());
  TaskFile task{root_ / "task.py", "level1/task", "class Model: pass\n", "hash"};
  auto result = judge.Judge(task, root_ / "candidate.py");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInternal);
  EXPECT_NE(result.status().message().find("worker table corrupted"), std::string::npos);
}

// The real evaluator on the CPU, judged from two threads at once: the evaluations take turns, each
// is reported to the observer, and each candidate gets its own verdict.
TEST_F(CandidateJudgeTest, AOneSlotPoolRunsTheRealEvaluatorOneCandidateAtATime) {
  std::string why;
  auto cpu = CpuEvaluator::Make(root_, why);
  if (!cpu) GTEST_SKIP() << why;
  auto task = ReadTaskFile(fs::path(KFORGE_SOURCE_DIR) / "tasks" / "level1" / "01_relu.py");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  const fs::path corpus = fs::path(KFORGE_SOURCE_DIR) / "tests" / "corpus" / "candidates" / "l1_01_relu";

  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0};
  std::vector<std::string> observed;
  JudgePool judge({&cpu->evaluator()}, [&](const TaskFile& judged, const fs::path& candidate, const Evaluation& evaluation) {
    if (inside.exchange(true)) ++overlaps;
    observed.push_back(candidate.filename().string() + " " + evaluation.verdict.ToString());
    EXPECT_EQ(judged.name, "level1/01_relu");
    inside = false;
  });

  auto [honest, cheat] = JudgeHonestAndCheatAtOnce(judge, *task, corpus);
  ASSERT_TRUE(honest.ok()) << honest.status().ToString();
  ASSERT_TRUE(cheat.ok()) << cheat.status().ToString();
  EXPECT_EQ(honest->verdict.ToString(), "accepted") << honest->verdict.message;
  EXPECT_FALSE(honest->timings_meaningful);
  EXPECT_EQ(cheat->verdict.ToString(), "rejected_hack(memoization)") << cheat->verdict.message;
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(judge.peak_concurrency(), 1);
  EXPECT_GT(judge.busy_seconds(), 0);
  ASSERT_EQ(observed.size(), 2u);
}

// Two slots (two worker sets, as one per GPU): two candidates judged from two threads at once run
// at the same time, each gets its own verdict, and the observer still sees one at a time.
TEST_F(CandidateJudgeTest, ATwoSlotPoolJudgesTwoCandidatesAtOnce) {
  std::string why;
  auto first_slot = CpuEvaluator::Make(root_ / "slot1", why);
  if (!first_slot) GTEST_SKIP() << why;
  auto second_slot = CpuEvaluator::Make(root_ / "slot2", why);
  ASSERT_NE(second_slot, nullptr) << why;
  auto task = ReadTaskFile(fs::path(KFORGE_SOURCE_DIR) / "tasks" / "level1" / "01_relu.py");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  const fs::path corpus = fs::path(KFORGE_SOURCE_DIR) / "tests" / "corpus" / "candidates" / "l1_01_relu";

  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0};
  std::atomic<int> observed{0};
  JudgePool judge({&first_slot->evaluator(), &second_slot->evaluator()},
                  [&](const TaskFile&, const fs::path&, const Evaluation&) {
                    if (inside.exchange(true)) ++overlaps;
                    ++observed;
                    inside = false;
                  });
  ASSERT_EQ(judge.slots(), 2u);
  auto [honest, cheat] = JudgeHonestAndCheatAtOnce(judge, *task, corpus);
  ASSERT_TRUE(honest.ok()) << honest.status().ToString();
  ASSERT_TRUE(cheat.ok()) << cheat.status().ToString();
  EXPECT_EQ(honest->verdict.ToString(), "accepted") << honest->verdict.message;
  EXPECT_EQ(cheat->verdict.ToString(), "rejected_hack(memoization)") << cheat->verdict.message;
  // Each evaluation starts its workers and takes seconds: the two overlapped.
  EXPECT_EQ(judge.peak_concurrency(), 2);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(observed.load(), 2);
}

}  // namespace
}  // namespace kforge
