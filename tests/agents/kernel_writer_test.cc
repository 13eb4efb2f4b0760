#include "agents/kernel_writer.h"

#include <gtest/gtest.h>

#include "agents/check_explanations.h"
#include "core/files.h"
#include "fakes.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

class KernelWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = *MakeTempDir(fs::temp_directory_path(), "kforge-writer-test-");
    auto library = PromptLibrary::Load(fs::path(KFORGE_SOURCE_DIR) / "prompts");
    ASSERT_TRUE(library.ok()) << library.status().ToString();
    prompts_.emplace(std::move(library).value());
    brief_.task.name = "level1/01_relu";
    brief_.task.path = "/tasks/level1/01_relu.py";
    brief_.task.source = "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n";
    brief_.device = "cuda:0";
    brief_.target = TargetDescription("cuda:0", "NVIDIA H200");
    settings_.max_rounds = 6;
  }
  void TearDown() override { RemoveTreeQuietly(run_); }

  WriterResult Run(BudgetLimits limits = {}) {
    budget_.emplace(limits);
    KernelWriter writer(settings_, brief_, *prompts_, provider_, judge_, *budget_, run_,
                        [this](const AttemptRecord& attempt) { observed_.push_back(attempt); });
    return writer.Run();
  }

  static std::vector<std::string> Verdicts(const WriterResult& result) {
    std::vector<std::string> verdicts;
    for (const auto& attempt : result.attempts) verdicts.push_back(attempt.verdict);
    return verdicts;
  }
  static std::vector<PromptKind> Prompts(const WriterResult& result) {
    std::vector<PromptKind> kinds;
    for (const auto& attempt : result.attempts) kinds.push_back(attempt.prompt);
    return kinds;
  }

  fs::path run_;
  std::optional<PromptLibrary> prompts_;
  WriterBrief brief_;
  WriterSettings settings_;
  ScriptedProvider provider_;
  MarkerJudge judge_;
  std::optional<WriterBudget> budget_;
  std::vector<AttemptRecord> observed_;
};

TEST_F(KernelWriterTest, CompileErrorThenFixedThenFasterUntilNoGain) {
  provider_.Then(OkReply(ProgramReply("compile_error", "I will use tl.relu.")));
  provider_.Then(OkReply(ProgramReply("accepted 1.2", "tl.relu does not exist; tl.maximum(x, 0.0) does.")));
  provider_.Then(OkReply(ProgramReply("accepted 2.0", "Larger blocks, fewer programs.")));
  provider_.Then(OkReply(ProgramReply("accepted 1.5")));
  provider_.Then(OkReply(ProgramReply("accepted 2.01")));  // within the 2% noise of 2.0: no gain
  provider_.Then(OkReply(ProgramReply("accepted 9.0")));   // never asked for

  WriterResult result = Run();
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  EXPECT_EQ(Verdicts(result), (std::vector<std::string>{"compile_error", "accepted", "accepted", "accepted", "accepted"}));
  EXPECT_EQ(Prompts(result), (std::vector<PromptKind>{PromptKind::kWrite, PromptKind::kRepair, PromptKind::kSpeedup,
                                                      PromptKind::kSpeedup, PromptKind::kSpeedup}));
  EXPECT_EQ(result.stop_reason, "accepted, and 2 speedup rounds in a row brought no gain");
  ASSERT_TRUE(result.best.has_value());
  EXPECT_EQ(result.best->round, 3);
  EXPECT_DOUBLE_EQ(result.best->speedup(), 2.0);
  EXPECT_NE(result.best->source.find("# accepted 2.0"), std::string::npos);
  EXPECT_EQ(result.best->path, run_ / "writer1" / "round3" / "candidate.py");
  EXPECT_TRUE(result.attempts[1].improved && result.attempts[2].improved && !result.attempts[3].improved);

  // Round 2 repairs round 1's program with the evaluator's words; round 3 speeds up round 2's.
  std::string repair = provider_.UserText(1);
  EXPECT_NE(repair.find("# compile_error"), std::string::npos);
  EXPECT_NE(repair.find("Verdict: compile_error"), std::string::npos);
  EXPECT_NE(repair.find("has no attribute 'relu'"), std::string::npos);
  std::string speedup = provider_.UserText(2);
  EXPECT_NE(speedup.find("make ModelNew faster"), std::string::npos);
  EXPECT_NE(speedup.find("# accepted 1.2"), std::string::npos);
  EXPECT_NE(speedup.find("1.20x"), std::string::npos);
  // Round 5 shows the best (round 3) and the last, slower attempt with its measurements.
  std::string last = provider_.UserText(4);
  EXPECT_NE(last.find("(writer 1, round 3)"), std::string::npos);
  EXPECT_NE(last.find("# accepted 1.5"), std::string::npos);
  EXPECT_EQ(observed_.size(), 5u);
  EXPECT_EQ(provider_.requests().size(), 5u);
}

TEST_F(KernelWriterTest, ResumedRunReusesTheRepliesItPaidForAndJudgesThemAgain) {
  provider_.Then(OkReply(ProgramReply("compile_error", "I will use tl.relu.")));
  provider_.Then(FailedCompletion(CallOutcome::kRateLimited, "429: slow down"));
  settings_.max_rounds = 2;
  WriterResult interrupted = Run();
  ASSERT_EQ(interrupted.attempts.size(), 2u);
  EXPECT_TRUE(fs::exists(run_ / "writer1" / "round1" / "completion.json"));
  EXPECT_FALSE(fs::exists(run_ / "writer1" / "round2" / "completion.json"));  // nothing was paid for

  // The same writer again: round 1 comes from its folder, round 2 is asked for (once).
  provider_.Then(OkReply(ProgramReply("accepted 1.5")));
  WriterResult resumed = Run();
  ASSERT_TRUE(resumed.status.ok()) << resumed.status.ToString();
  EXPECT_EQ(Verdicts(resumed), (std::vector<std::string>{"compile_error", "accepted"}));
  EXPECT_TRUE(resumed.attempts[0].reused_reply);
  EXPECT_FALSE(resumed.attempts[1].reused_reply);
  EXPECT_EQ(resumed.attempts[1].prompt, PromptKind::kRepair);  // built on round 1's judged program
  EXPECT_EQ(provider_.requests().size(), 3u);
  EXPECT_EQ(judge_.calls(), 3);  // round 1 judged twice: once per run
}

TEST_F(KernelWriterTest, RequestsCarryTheWritersSettings) {
  settings_.temperature = 0.35;
  settings_.model = "model-x";
  settings_.max_tokens = 4000;
  provider_.Then(OkReply(ProgramReply("accepted 1.5")));
  settings_.max_rounds = 1;
  Run();
  ASSERT_EQ(provider_.requests().size(), 1u);
  const CompletionRequest request = provider_.requests()[0];
  EXPECT_EQ(request.model, "model-x");
  EXPECT_DOUBLE_EQ(request.temperature, 0.35);
  EXPECT_EQ(request.max_tokens, 4000);
  ASSERT_EQ(request.messages.size(), 2u);
  EXPECT_EQ(request.messages[0].role, Role::kSystem);
  EXPECT_NE(request.messages[0].content.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(request.messages[1].content.find("return torch.relu(x)"), std::string::npos);
}

TEST_F(KernelWriterTest, GarbageReplyIsAFailedAttemptFedBack) {
  provider_.Then(OkReply("I would write a fused ReLU kernel with a block size of 1024 and masking."));
  provider_.Then(OkReply(ProgramReply("accepted 1.1")));
  settings_.max_rounds = 2;
  WriterResult result = Run();
  EXPECT_EQ(Verdicts(result), (std::vector<std::string>{"no_code_block", "accepted"}));
  EXPECT_EQ(result.attempts[0].outcome, AttemptOutcome::kExtractionFailed);
  EXPECT_TRUE(result.attempts[0].candidate.empty());
  EXPECT_EQ(judge_.calls(), 1);
  std::string repair = provider_.UserText(1);
  EXPECT_NE(repair.find("Your last reply"), std::string::npos);
  EXPECT_NE(repair.find("no fenced Python code block"), std::string::npos);
  EXPECT_EQ(repair.find("Your previous candidate"), std::string::npos);
}

TEST_F(KernelWriterTest, EmptyReplyIsFedBack) {
  provider_.Then(FailedReply(CallOutcome::kEmptyReply, "the reply had no text"));
  provider_.Then(OkReply(ProgramReply("accepted 1.1")));
  settings_.max_rounds = 2;
  WriterResult result = Run();
  EXPECT_EQ(Verdicts(result), (std::vector<std::string>{"empty_reply", "accepted"}));
  EXPECT_EQ(result.attempts[0].outcome, AttemptOutcome::kCallFailed);
  EXPECT_NE(provider_.UserText(1).find("Your reply was empty"), std::string::npos);
}

TEST_F(KernelWriterTest, TruncatedReplyIsFedBackButACompleteProgramBeforeTheCutIsJudged) {
  provider_.Then(FailedReply(CallOutcome::kTruncatedReply, "stopped at max_tokens",
                             "Plan first.\n```python\nimport torch\n\nclass ModelNew(torch.nn.Module):\n    def forw"));
  provider_.Then(FailedReply(CallOutcome::kTruncatedReply, "stopped at max_tokens",
                             ProgramReply("wrong_output") + "\nWhy this works: first, the mask"));
  settings_.max_rounds = 2;
  WriterResult result = Run();
  EXPECT_EQ(Verdicts(result), (std::vector<std::string>{"truncated_reply", "wrong_output"}));
  EXPECT_EQ(result.attempts[0].call_outcome, CallOutcome::kTruncatedReply);
  EXPECT_NE(provider_.UserText(1).find("cut off at the output token limit"), std::string::npos);
  EXPECT_EQ(result.attempts[1].outcome, AttemptOutcome::kJudged);
}

TEST_F(KernelWriterTest, CheatingIsRejectedAndTheExplanationReachesTheNextPrompt) {
  provider_.Then(OkReply(ProgramReply("memoization", "Cache outputs by data_ptr to skip recomputation.")));
  provider_.Then(OkReply(ProgramReply("accepted 1.3", "Compute on every call.")));
  settings_.max_rounds = 2;
  WriterResult result = Run();
  EXPECT_EQ(Verdicts(result), (std::vector<std::string>{"rejected_hack(memoization)", "accepted"}));
  std::string repair = provider_.UserText(1);
  EXPECT_NE(repair.find("Verdict: rejected_hack(memoization)"), std::string::npos) << repair;
  EXPECT_NE(repair.find("the candidate returned exactly its previous output"), std::string::npos);
  EXPECT_NE(repair.find("Why this is not allowed: " + WhyNotAllowed("memoization")), std::string::npos);
}

TEST_F(KernelWriterTest, TransientCallFailureResendsTheSamePrompt) {
  provider_.Then(OkReply(ProgramReply("compile_error")));
  provider_.Then(FailedReply(CallOutcome::kRateLimited, "HTTP 429 after 5 attempts"));
  provider_.Then(OkReply(ProgramReply("accepted 1.4")));
  settings_.max_rounds = 3;
  WriterResult result = Run();
  EXPECT_EQ(Verdicts(result), (std::vector<std::string>{"compile_error", "rate_limited", "accepted"}));
  EXPECT_EQ(result.attempts[1].message, "HTTP 429 after 5 attempts");
  // The same prompt again, but for the round number in its title.
  std::string second = provider_.UserText(1), third = provider_.UserText(2);
  EXPECT_NE(second.find("(round 2)"), std::string::npos);
  EXPECT_EQ(second.substr(second.find('\n')), third.substr(third.find('\n')));
  EXPECT_EQ(result.attempts[2].prompt, PromptKind::kRepair);
}

TEST_F(KernelWriterTest, PermanentCallFailureStopsEveryWriter) {
  provider_.Then(FailedReply(CallOutcome::kAuthError, "HTTP 401: set OPENAI_API_KEY"));
  WriterResult result = Run();
  ASSERT_EQ(result.attempts.size(), 1u);
  EXPECT_TRUE(result.status.ok());
  EXPECT_EQ(result.stop_reason, "the model call failed: auth_error: HTTP 401: set OPENAI_API_KEY");
  EXPECT_TRUE(budget_->stopped());
}

TEST_F(KernelWriterTest, BrokenTaskIsAnErrorThatStopsEveryWriter) {
  provider_.Then(OkReply(ProgramReply("broken_task")));
  WriterResult result = Run();
  ASSERT_EQ(result.attempts.size(), 1u);
  EXPECT_EQ(result.attempts[0].outcome, AttemptOutcome::kJudgeFailed);
  EXPECT_EQ(result.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status.message().find("get_inputs() raised ValueError"), std::string::npos);
  EXPECT_TRUE(budget_->stopped());
}

TEST_F(KernelWriterTest, InfraErrorLeavesTheConversationAsItWas) {
  provider_.Then(OkReply(ProgramReply("infra_error")));
  provider_.Then(OkReply(ProgramReply("accepted 1.2")));
  settings_.max_rounds = 2;
  WriterResult result = Run();
  EXPECT_EQ(Verdicts(result), (std::vector<std::string>{"infra_error", "accepted"}));
  EXPECT_EQ(result.attempts[1].prompt, PromptKind::kWrite);
}

TEST_F(KernelWriterTest, UntimedAcceptanceEndsTheRun) {
  brief_.device = "cpu";
  provider_.Then(OkReply(ProgramReply("accepted cpu")));
  WriterResult result = Run();
  ASSERT_EQ(result.attempts.size(), 1u);
  EXPECT_FALSE(result.attempts[0].speedup.has_value());
  ASSERT_TRUE(result.best.has_value());
  EXPECT_NE(result.stop_reason.find("timings on cpu mean nothing"), std::string::npos);
  EXPECT_TRUE(budget_->stopped());
}

TEST_F(KernelWriterTest, BudgetStopsTheWriter) {
  provider_.AnswerWith([](const CompletionRequest&) { return OkReply(ProgramReply("runtime"), 100, 100, 0.5); });
  WriterResult result = Run(BudgetLimits{.max_usd = 1.0});
  EXPECT_EQ(result.attempts.size(), 2u);
  EXPECT_EQ(result.stop_reason, "the budget of $1.00 is spent ($1.0000)");
  EXPECT_FALSE(result.best.has_value());
}

TEST_F(KernelWriterTest, RunsOutOfRoundsWithoutAnAcceptedCandidate) {
  provider_.AnswerWith([](const CompletionRequest&) { return OkReply(ProgramReply("wrong_output")); });
  settings_.max_rounds = 3;
  WriterResult result = Run();
  EXPECT_EQ(result.attempts.size(), 3u);
  EXPECT_EQ(result.stop_reason, "");
  EXPECT_FALSE(result.best.has_value());
  for (size_t i = 1; i < 3; ++i) EXPECT_EQ(result.attempts[i].prompt, PromptKind::kRepair);
}

TEST_F(KernelWriterTest, EachRoundLeavesItsFiles) {
  provider_.Then(OkReply(ProgramReply("compile_error")));
  provider_.Then(OkReply("no code"));
  settings_.max_rounds = 2;
  Run();
  fs::path first = run_ / "writer1" / "round1";
  for (const char* name : {"prompt.md", "reply.md", "candidate.py", "verdict.json", "feedback.md"}) {
    EXPECT_TRUE(fs::exists(first / name)) << name;
  }
  EXPECT_NE(ReadFile(first / "prompt.md")->find("## system"), std::string::npos);
  EXPECT_NE(ReadFile(first / "feedback.md")->find("Verdict: compile_error"), std::string::npos);
  auto verdict = ParseJson(*ReadFile(first / "verdict.json"), "verdict.json");
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ((*verdict)["evaluation"]["verdict"], "compile_error");
  EXPECT_EQ((*verdict)["attempt"]["round"], 1);

  fs::path second = run_ / "writer1" / "round2";
  EXPECT_FALSE(fs::exists(second / "candidate.py"));
  EXPECT_EQ(*ReadFile(second / "reply.md"), "no code");
  auto no_code = ParseJson(*ReadFile(second / "verdict.json"), "verdict.json");
  EXPECT_TRUE((*no_code)["evaluation"].is_null());
  EXPECT_EQ((*no_code)["attempt"]["verdict"], "no_code_block");
}

TEST_F(KernelWriterTest, BrokenTemplateIsAnError) {
  prompts_.emplace(std::map<std::string, std::string>{{"system", "{{target}}"}, {"write", "{{nonsense}}"}});
  WriterResult result = Run();
  EXPECT_TRUE(result.attempts.empty());
  EXPECT_EQ(result.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status.message().find("{{nonsense}}"), std::string::npos);
  EXPECT_TRUE(provider_.requests().empty());
}

}  // namespace
}  // namespace kforge
