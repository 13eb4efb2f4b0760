#include "report/attempt_export.h"

#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "core/files.h"
#include "core/hash.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

std::vector<Json> Lines(const std::string& text) {
  std::vector<Json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  return lines;
}

class AttemptExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() / ("kforge_export_" + std::to_string(::getpid()));
    fs::create_directories(folder_ / "stage" / "writer1" / "round1");
    fs::create_directories(folder_ / "stage" / "writer1" / "round2");
    store_ = std::move(Store::OpenInMemory()).value();
    ASSERT_TRUE(WriteFile(folder_ / "relu.py", kTask).ok());
    ASSERT_TRUE(WriteFile(folder_ / "stage" / "stage.json",
                          Json{{"task", (folder_ / "relu.py").string()}, {"precision", "fp32"}, {"mode", "strict"}}.dump())
                    .ok());
    Round("round1", "write", "wrong_output", std::optional<std::string>("class ModelNew: bad"), std::nullopt);
    Round("round2", "repair", "accepted", std::optional<std::string>("class ModelNew: good"), 1.5);
    ASSERT_TRUE(store_->StartRun("run-1", "optimize --llm", {{"folder", (folder_ / "stage").string()}, {"llm", "replay:x"}}).ok());
    // The LLM's accepted candidate is also a stored evaluation; a service evaluation is another.
    Evaluate("class ModelNew: good", "llm:replay:x", "accepted", 1.5);
    Evaluate("class ModelNew: from service", "service:alice", "timeout", std::nullopt);
  }
  void TearDown() override { fs::remove_all(folder_); }

  void Round(const std::string& round, const std::string& prompt, const std::string& verdict,
             const std::optional<std::string>& candidate, std::optional<double> speedup) {
    const fs::path dir = folder_ / "stage" / "writer1" / round;
    ASSERT_TRUE(WriteFile(dir / "prompt.md", "prompt of " + round).ok());
    ASSERT_TRUE(WriteFile(dir / "reply.md", "reply of " + round).ok());
    ASSERT_TRUE(WriteFile(dir / "feedback.md", "feedback of " + round).ok());
    if (candidate) {
      ASSERT_TRUE(WriteFile(dir / "candidate.py", *candidate).ok());
    }
    Json attempt = {{"writer", 1}, {"round", round == "round1" ? 1 : 2}, {"prompt", prompt}, {"verdict", verdict},
                    {"verdict_kind", verdict}, {"message", ""}, {"speedup", JsonOrNull(speedup)},
                    {"prompt_tokens", 100}, {"completion_tokens", 50}, {"cost_usd", 0.01}};
    ASSERT_TRUE(WriteFile(dir / "verdict.json", Json{{"attempt", attempt}}.dump()).ok());
  }
  void Evaluate(const std::string& candidate, const std::string& origin, const std::string& verdict,
                std::optional<double> speedup) {
    EvaluationRecord record;
    record.task_hash = *store_->RecordTask((folder_ / "relu.py").string(), "relu", kTask);
    record.candidate_hash = *store_->RecordCandidate(candidate, origin);
    record.environment_id = *store_->RecordEnvironment({{"gpu", "H200"}});
    record.device = "cuda:0";
    record.precision = "fp32";
    record.mode = "strict";
    record.verdict = record.verdict_kind = verdict;
    record.speedup = speedup;
    ASSERT_TRUE(store_->RecordEvaluation(record).ok());
  }

  static constexpr const char* kTask = "class Model:\n    pass\n";
  fs::path folder_;
  std::unique_ptr<Store> store_;
};

TEST_F(AttemptExportTest, EveryRoundAndEveryOtherEvaluationIsOneLine) {
  std::ostringstream out;
  auto counts = ExportAttempts(*store_, {}, out);
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->llm, 2);
  EXPECT_EQ(counts->evaluations, 1);  // the LLM's accepted candidate is not repeated
  std::vector<Json> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["kind"], "llm");
  EXPECT_EQ(lines[0]["prompt"], "prompt of round1");
  EXPECT_EQ(lines[0]["reply"], "reply of round1");
  EXPECT_EQ(lines[0]["prompt_kind"], "write");
  EXPECT_EQ(lines[0]["accepted"], false);
  EXPECT_EQ(lines[0]["task_source"], kTask);
  EXPECT_EQ(lines[0]["task_hash"], Sha256Hex(kTask));
  EXPECT_EQ(lines[0]["model"], "replay:x");
  EXPECT_TRUE(lines[0]["evaluation_id"].is_null());
  EXPECT_EQ(lines[1]["candidate"], "class ModelNew: good");
  EXPECT_EQ(lines[1]["speedup"], 1.5);
  EXPECT_EQ(lines[1]["feedback"], "feedback of round2");
  EXPECT_TRUE(lines[1]["evaluation_id"].is_number());
  EXPECT_EQ(lines[2]["kind"], "evaluation");
  EXPECT_EQ(lines[2]["origin"], "service:alice");
  EXPECT_EQ(lines[2]["verdict_kind"], "timeout");
  EXPECT_EQ(lines[2]["task_source"], kTask);
  EXPECT_TRUE(lines[2]["speedup"].is_null());
}

TEST_F(AttemptExportTest, FiltersByRunAndVerdict) {
  std::ostringstream accepted;
  ExportOptions only_accepted;
  only_accepted.accepted_only = true;
  ASSERT_TRUE(ExportAttempts(*store_, only_accepted, accepted).ok());
  ASSERT_EQ(Lines(accepted.str()).size(), 1u);
  EXPECT_EQ(Lines(accepted.str())[0]["candidate"], "class ModelNew: good");

  std::ostringstream unknown;
  ExportOptions by_run;
  by_run.runs = {"no-such-run"};
  EXPECT_EQ(ExportAttempts(*store_, by_run, unknown).status().code(), StatusCode::kNotFound);

  fs::remove_all(folder_ / "stage");
  std::ostringstream gone;
  auto counts = ExportAttempts(*store_, {}, gone);
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->runs_without_folder, 1);
  EXPECT_EQ(counts->evaluations, 2);  // without the rounds, both evaluations are lines of their own
}

}  // namespace
}  // namespace kforge
