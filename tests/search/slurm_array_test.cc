#include "search/slurm_array.h"

#include <gtest/gtest.h>

#include "core/files.h"
#include "fake_process_runner.h"
#include "llm/sleeper.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

class FakeSleeper : public Sleeper {
 public:
  void Sleep(double seconds) override { sleeps_.push_back(seconds); }
  const std::vector<double>& sleeps() const { return sleeps_; }

 private:
  std::vector<double> sleeps_;
};

SlurmBenchPlan Plan(const fs::path& out) {
  SlurmBenchPlan plan;
  plan.out = out;
  plan.shards = 3;
  plan.shard_command = {"/opt/kforge/kforge", "--device=cpu", "--workspace=/shared/out/slurm/workspace-" + std::string(kArrayTaskId),
                        "bench", "/shared/suite", "--out=/shared/out", "--shard=" + std::string(kArrayTaskId) + "/3"};
  plan.merge_command = {"/opt/kforge/kforge", "--device=cpu", "--workspace=/shared/out/slurm/workspace-merge",
                        "bench", "/shared/suite", "--out=/shared/out", "--no-run"};
  plan.sbatch_args = {"--partition=gpu", "--gres=gpu:1"};
  return plan;
}

struct WordCase {
  std::string word;
  std::string shell;
};

class ShellWordTest : public ::testing::TestWithParam<WordCase> {};

TEST_P(ShellWordTest, QuotesWhatTheShellWouldChange) { EXPECT_EQ(ShellWord(GetParam().word), GetParam().shell); }

INSTANTIATE_TEST_SUITE_P(
    Words, ShellWordTest,
    ::testing::Values(WordCase{"/opt/kforge/kforge", "/opt/kforge/kforge"}, WordCase{"--out=/a/b", "--out=/a/b"},
                      WordCase{"", "''"}, WordCase{"two words", "'two words'"}, WordCase{"it's", "'it'\\''s'"},
                      WordCase{"$HOME", "'$HOME'"}, WordCase{"a*b", "'a*b'"}, WordCase{"`id`", "'`id`'"},
                      WordCase{"--shard=${SLURM_ARRAY_TASK_ID}/4", "--shard=\"${SLURM_ARRAY_TASK_ID}\"/4"},
                      WordCase{"${SLURM_ARRAY_TASK_ID}", "\"${SLURM_ARRAY_TASK_ID}\""},
                      WordCase{"/my out/ws-${SLURM_ARRAY_TASK_ID}", "'/my out/ws-'\"${SLURM_ARRAY_TASK_ID}\""}));

// What bash makes of the quoted words is exactly the words, the array task id put in.
TEST(ShellWordTest, BashReadsBackEveryWordAsGiven) {
  const std::vector<std::string> words = {"plain", "two  spaces", "tab\there", "new\nline", "it's", "\"double\"",
                                          "$HOME", "`id`", "a*?[b]", "back\\slash", "semi;colon", "-n", "",
                                          "ws-${SLURM_ARRAY_TASK_ID}", "--shard=${SLURM_ARRAY_TASK_ID}/7"};
  std::string script = "printf '%s\\0'";
  for (const std::string& word : words) script += " " + ShellWord(word);
  auto runner = MakeSubprocessRunner({"PATH=/usr/bin:/bin", "SLURM_ARRAY_TASK_ID=5", "HOME=/root"}, 10);
  auto printed = runner->Run({"bash", "-c", script});
  ASSERT_TRUE(printed.ok()) << printed.status().ToString();
  ASSERT_TRUE(printed->ok()) << printed->output;
  std::vector<std::string> read;
  for (size_t start = 0, end; (end = printed->output.find('\0', start)) != std::string::npos; start = end + 1) {
    read.push_back(printed->output.substr(start, end - start));
  }
  std::vector<std::string> expected = words;
  expected[13] = "ws-5";
  expected[14] = "--shard=5/7";
  EXPECT_EQ(read, expected);
}

TEST(SlurmArrayTest, TheShardScriptRunsOneShardPerElement) {
  EXPECT_EQ(ShardScript(Plan("/shared/out")),
            "#!/bin/bash\n"
            "# kforge bench as a Slurm job array: element I of 3 runs shard I/3 into /shared/out.\n"
            "# Written by `kforge bench --slurm`; OUT, the kforge binary and the workspace must be on a\n"
            "# filesystem every node sees.\n"
            "#SBATCH --job-name=kforge-bench\n"
            "#SBATCH --output=/shared/out/slurm/shard-%A_%a.out\n"
            "exec /opt/kforge/kforge --device=cpu --workspace=/shared/out/slurm/workspace-\"${SLURM_ARRAY_TASK_ID}\" "
            "bench /shared/suite --out=/shared/out --shard=\"${SLURM_ARRAY_TASK_ID}\"/3\n");
}

TEST(SlurmArrayTest, TheMergeScriptSummarizesAndKeepsItsExitStatus) {
  EXPECT_EQ(MergeScript(Plan("/shared/out")),
            "#!/bin/bash\n"
            "# The summary of kforge bench's 3 shards in /shared/out, once every array element has ended.\n"
            "# Written by `kforge bench --slurm`; OUT, the kforge binary and the workspace must be on a\n"
            "# filesystem every node sees.\n"
            "#SBATCH --job-name=kforge-bench-merge\n"
            "#SBATCH --output=/shared/out/slurm/merge-%j.out\n"
            "#SBATCH --error=/shared/out/slurm/merge-%j.err\n"
            "/opt/kforge/kforge --device=cpu --workspace=/shared/out/slurm/workspace-merge bench /shared/suite "
            "--out=/shared/out --no-run\n"
            "status=$?\n"
            "echo \"$status\" > /shared/out/slurm/merge-\"${SLURM_JOB_ID}\".status\n"
            "exit \"$status\"\n");
}

TEST(SlurmArrayTest, OutputPathsEscapeSlurmPatternsAndBlanks) {
  const std::string script = ShardScript(Plan("/shared/100% done/out"));
  EXPECT_NE(script.find("#SBATCH --output=\"/shared/100%% done/out/slurm/shard-%A_%a.out\"\n"), std::string::npos)
      << script;
}

TEST(SlurmArrayTest, SubmissionsPassTheUsersArgumentsToBothJobs) {
  const SlurmBenchPlan plan = Plan("/shared/out");
  EXPECT_EQ(ArraySubmission(plan, "/shared/out/slurm/bench.sbatch"),
            (std::vector<std::string>{"sbatch", "--parsable", "--array=1-3", "--partition=gpu", "--gres=gpu:1",
                                      "/shared/out/slurm/bench.sbatch"}));
  EXPECT_EQ(MergeSubmission(plan, "41", "/shared/out/slurm/merge.sbatch"),
            (std::vector<std::string>{"sbatch", "--parsable", "--dependency=afterany:41", "--partition=gpu",
                                      "--gres=gpu:1", "/shared/out/slurm/merge.sbatch"}));
}

struct ParsableCase {
  std::string output;
  std::string id;  // empty: no id there
};

class ParsableJobIdTest : public ::testing::TestWithParam<ParsableCase> {};

TEST_P(ParsableJobIdTest, FindsTheIdLine) {
  auto id = ParseParsableJobId(GetParam().output);
  if (GetParam().id.empty()) {
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
  } else {
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_EQ(*id, GetParam().id);
  }
}

INSTANTIATE_TEST_SUITE_P(Outputs, ParsableJobIdTest,
                         ::testing::Values(ParsableCase{"123\n", "123"}, ParsableCase{"123;cluster2\n", "123"},
                                           ParsableCase{"sbatch: warning: can't honor --ntasks-per-node\n456\n", "456"},
                                           ParsableCase{"  789  \r\n", "789"}, ParsableCase{"", ""},
                                           ParsableCase{"Submitted batch job 5\n", ""}));

class SubmitSlurmBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(fs::temp_directory_path(), "kforge-slurm-test-");
    ASSERT_TRUE(dir.ok());
    out_ = *dir / "out";
  }
  void TearDown() override { RemoveTreeQuietly(out_.parent_path()); }

  fs::path out_;
  FakeProcessRunner runner_;
};

TEST_F(SubmitSlurmBenchTest, WritesBothScriptsAndSubmitsTheMergeAfterTheArray) {
  runner_.Answer(0, "41\n");
  runner_.Answer(0, "42\n");
  auto submitted = SubmitSlurmBench(Plan(out_), runner_);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  EXPECT_EQ(submitted->array_id, "41");
  EXPECT_EQ(submitted->merge_id, "42");
  ASSERT_EQ(runner_.calls().size(), 2u);
  EXPECT_EQ(runner_.calls()[0], ArraySubmission(Plan(out_), out_ / "slurm" / "bench.sbatch"));
  EXPECT_EQ(runner_.calls()[1], MergeSubmission(Plan(out_), "41", out_ / "slurm" / "merge.sbatch"));
  EXPECT_EQ(*ReadFile(out_ / "slurm" / "bench.sbatch"), ShardScript(Plan(out_)));
  EXPECT_EQ(*ReadFile(out_ / "slurm" / "merge.sbatch"), MergeScript(Plan(out_)));
}

TEST_F(SubmitSlurmBenchTest, NoSbatchIsAUsageErrorThatSaysWhere) {
  runner_.Fail(Status::NotFound("sbatch is not on the PATH"));
  auto submitted = SubmitSlurmBench(Plan(out_), runner_);
  EXPECT_EQ(submitted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(submitted.status().message().find("sbatch is not on the PATH here"), std::string::npos);
}

TEST_F(SubmitSlurmBenchTest, ARefusedArrayCarriesSbatchsWords) {
  runner_.Answer(1, "sbatch: error: invalid partition specified: gpu\n");
  auto submitted = SubmitSlurmBench(Plan(out_), runner_);
  EXPECT_EQ(submitted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(submitted.status().message().find("invalid partition specified: gpu"), std::string::npos)
      << submitted.status().message();
  EXPECT_EQ(runner_.calls().size(), 1u);  // no merge job after a refused array
}

TEST_F(SubmitSlurmBenchTest, ARefusedMergeJobCancelsTheArray) {
  runner_.Answer(0, "41\n");
  runner_.Answer(1, "sbatch: error: Batch job submission failed\n");
  runner_.Answer(0, "");
  auto submitted = SubmitSlurmBench(Plan(out_), runner_);
  EXPECT_EQ(submitted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(submitted.status().message().find("job array 41 was cancelled"), std::string::npos);
  ASSERT_EQ(runner_.calls().size(), 3u);
  EXPECT_EQ(runner_.calls()[2], (std::vector<std::string>{"scancel", "41"}));
}

struct QueueCase {
  std::string name;
  int code;
  std::string output;
  bool active;
};

class SlurmJobActiveTest : public ::testing::TestWithParam<QueueCase> {};

TEST_P(SlurmJobActiveTest, ReadsSqueue) {
  FakeProcessRunner runner;
  runner.Answer(GetParam().code, GetParam().output);
  auto active = SlurmJobActive("42", runner);
  ASSERT_TRUE(active.ok()) << active.status().ToString();
  EXPECT_EQ(*active, GetParam().active);
  EXPECT_EQ(runner.calls()[0], (std::vector<std::string>{"squeue", "-h", "-j", "42", "-o", "%T"}));
}

INSTANTIATE_TEST_SUITE_P(States, SlurmJobActiveTest,
                         ::testing::Values(QueueCase{"Pending", 0, "PENDING\n", true},
                                           QueueCase{"Running", 0, "RUNNING\n", true},
                                           QueueCase{"Completing", 0, "COMPLETING\n", true},
                                           QueueCase{"Completed", 0, "COMPLETED\n", false},
                                           QueueCase{"Failed", 0, "FAILED\n", false},
                                           QueueCase{"EndedAndNotListed", 0, "", false},
                                           QueueCase{"Forgotten", 1, "slurm_load_jobs error: Invalid job id specified\n",
                                                     false}),
                         [](const auto& info) { return info.param.name; });

TEST(SlurmJobActiveTest, AnotherSqueueFailureIsUnavailable) {
  FakeProcessRunner runner;
  runner.Answer(1, "squeue: error: Unable to contact slurm controller (connect failure)\n");
  EXPECT_EQ(SlurmJobActive("42", runner).status().code(), StatusCode::kUnavailable);
}

TEST(WaitForSlurmJobTest, PollsLessAndLessOftenUntilTheJobEnds) {
  FakeProcessRunner runner;
  runner.Answer(0, "PENDING\n");
  runner.Answer(0, "RUNNING\n");
  runner.Answer(0, "RUNNING\n");
  runner.Answer(0, "");
  FakeSleeper sleeper;
  ASSERT_TRUE(WaitForSlurmJob("42", runner, sleeper, 2, 4).ok());
  EXPECT_EQ(sleeper.sleeps(), (std::vector<double>{2, 3, 4}));
}

TEST(WaitForSlurmJobTest, GivesUpAfterSqueueFailsFiveTimesInARow) {
  FakeProcessRunner runner;
  runner.Answer(1, "squeue: error: Unable to contact slurm controller\n");
  FakeSleeper sleeper;
  Status waited = WaitForSlurmJob("42", runner, sleeper);
  EXPECT_EQ(waited.code(), StatusCode::kUnavailable);
  EXPECT_EQ(runner.calls().size(), 5u);
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

TEST(SlurmWorkersTest, TheWorkersArrayRunsOneWorkerPerElementAndCanBeCancelled) {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("kforge_slurm_workers_" + std::to_string(::getpid()));
  SlurmWorkerPlan plan{folder, 3, {"/opt/kforge", "worker", "--connect=http://head:8765", std::string("--name=slurm-") + kArrayTaskId},
                       {"--partition=gpu"}};
  const std::string script = WorkerScript(plan);
  EXPECT_NE(script.find("#SBATCH --job-name=kforge-worker"), std::string::npos);
  EXPECT_NE(script.find("exec /opt/kforge worker --connect=http://head:8765 --name=slurm-\"${SLURM_ARRAY_TASK_ID}\""),
            std::string::npos)
      << script;
  FakeProcessRunner runner;
  runner.Answer(0, "77\n");
  auto submitted = SubmitSlurmWorkers(plan, runner);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  EXPECT_EQ(*submitted, "77");
  EXPECT_EQ(runner.calls()[0], (std::vector<std::string>{"sbatch", "--parsable", "--array=1-3", "--partition=gpu",
                                                         (folder / "worker.sbatch").string()}));
  EXPECT_TRUE(std::filesystem::exists(folder / "worker.sbatch"));
  runner.Answer(1, "scancel: error: Invalid job id");
  EXPECT_TRUE(CancelSlurmJob("77", runner).ok());  // the first scripted answer (exit 0) is still in front
  EXPECT_FALSE(CancelSlurmJob("78", runner).ok());
  EXPECT_EQ(runner.calls()[1], (std::vector<std::string>{"scancel", "77"}));
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace kforge
