// A kernel writer driven by a hand-written cassette (tests/agents/data/relu_writer.jsonl) and
// judged by the real evaluator on the CPU, for tasks/level1/01_relu.py: the first reply calls a
// Triton function that does not exist, the repair caches results by buffer address, and the
// last reply, told why caching is not allowed, computes honestly and is accepted.
#include <gtest/gtest.h>

#include "agents/check_explanations.h"
#include "agents/kernel_writer.h"
#include "cpu_evaluator.h"
#include "llm/replay_provider.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

class WriterEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = *MakeTempDir(fs::temp_directory_path(), "kforge-writer-e2e-"); }
  void TearDown() override {
    if (!HasFailure()) RemoveTreeQuietly(root_);
  }
  fs::path root_;
};

TEST_F(WriterEndToEndTest, CassetteRepliesJudgedByTheRealEvaluatorOnTheCpu) {
  std::string why;
  auto cpu = CpuEvaluator::Make(root_ / "eval", why);
  if (!cpu) GTEST_SKIP() << why;
  auto provider = ReplayProvider::Open(fs::path(KFORGE_AGENTS_TEST_DATA) / "relu_writer.jsonl");
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  auto prompts = PromptLibrary::Load(fs::path(KFORGE_SOURCE_DIR) / "prompts");
  ASSERT_TRUE(prompts.ok()) << prompts.status().ToString();
  auto task = ReadTaskFile(fs::path(KFORGE_SOURCE_DIR) / "tasks" / "level1" / "01_relu.py");
  ASSERT_TRUE(task.ok()) << task.status().ToString();

  WriterBrief brief;
  brief.task = *task;
  brief.device = "cpu";
  brief.target = TargetDescription("cpu", "");
  int judged = 0;
  JudgePool judge({&cpu->evaluator()}, [&](const TaskFile&, const fs::path&, const Evaluation&) { ++judged; });
  WriterBudget budget(BudgetLimits{});
  WriterSettings settings;
  settings.max_rounds = 5;
  const fs::path run = root_ / "run";
  KernelWriter writer(settings, brief, *prompts, **provider, judge, budget, run);
  WriterResult result = writer.Run();

  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  ASSERT_EQ(result.attempts.size(), 3u) << result.stop_reason;
  EXPECT_EQ(result.attempts[0].verdict, "compile_error") << result.attempts[0].message;
  EXPECT_EQ(result.attempts[1].verdict, "rejected_hack(memoization)") << result.attempts[1].message;
  EXPECT_EQ(result.attempts[2].verdict, "accepted") << result.attempts[2].message;
  EXPECT_EQ(result.attempts[1].prompt, PromptKind::kRepair);
  EXPECT_EQ(judged, 3);
  EXPECT_EQ((*provider)->unused(), 0u);
  EXPECT_NE(result.stop_reason.find("mean nothing"), std::string::npos);

  ASSERT_TRUE(result.best.has_value());
  EXPECT_EQ(result.best->path, run / "writer1" / "round3" / "candidate.py");
  EXPECT_EQ(result.best->source.find("_results"), std::string::npos);
  EXPECT_TRUE(result.best->evaluation.verdict.accepted());

  // What the model was told: the real error for round 1, the rule and its reason for round 2.
  auto second_prompt = ReadFile(run / "writer1" / "round2" / "prompt.md");
  ASSERT_TRUE(second_prompt.ok());
  EXPECT_NE(second_prompt->find("module 'triton.language' has no attribute 'relu'"), std::string::npos);
  EXPECT_NE(second_prompt->find("File \"candidate.py\""), std::string::npos);
  auto third_prompt = ReadFile(run / "writer1" / "round3" / "prompt.md");
  ASSERT_TRUE(third_prompt.ok());
  EXPECT_NE(third_prompt->find("Verdict: rejected_hack(memoization)"), std::string::npos);
  EXPECT_NE(third_prompt->find(WhyNotAllowed("memoization")), std::string::npos);
  EXPECT_NE(third_prompt->find("self._results = {}"), std::string::npos);
  auto verdict = ParseJson(*ReadFile(run / "writer1" / "round3" / "verdict.json"), "verdict.json");
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ((*verdict)["evaluation"]["verdict"], "accepted");
}

}  // namespace
}  // namespace kforge
