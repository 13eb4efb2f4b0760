#include "llm/cassette.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/files.h"
#include "fakes.h"
#include "llm/recording_provider.h"
#include "llm/replay_provider.h"

namespace kforge {
namespace {

CompletionRequest Ask(const std::string& question, const std::string& model = "m") {
  CompletionRequest request;
  request.model = model;
  request.messages = {{Role::kSystem, "you write kernels"}, {Role::kUser, question}};
  return request;
}

class CassetteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(std::filesystem::temp_directory_path(), "kforge_llm_cassette_test_");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    path_ = *dir / "calls.jsonl";
  }
  void TearDown() override { RemoveTreeQuietly(path_.parent_path()); }

  void WriteCassette(const std::string& text) { ASSERT_TRUE(WriteFile(path_, text).ok()); }

  std::unique_ptr<ReplayProvider> Replay() {
    auto replay = ReplayProvider::Open(path_);
    EXPECT_TRUE(replay.ok()) << replay.status().ToString();
    return replay.ok() ? std::move(replay).value() : nullptr;
  }

  std::vector<std::string> Lines() {
    std::vector<std::string> lines;
    std::string text = ReadFile(path_).ok() ? *ReadFile(path_) : "";
    for (size_t start = 0, end; start < text.size(); start = end + 1) {
      end = text.find('\n', start);
      lines.push_back(text.substr(start, end - start));
      if (end == std::string::npos) break;
    }
    return lines;
  }

  std::filesystem::path path_;
};

TEST_F(CassetteTest, ReplaysByRequestHash) {
  Completion reply = OkCompletion("def add(): pass", 10, 5);
  reply.finish_reason = "stop";
  WriteCassette(CassetteLine(Ask("other"), OkCompletion("wrong")) + "\n" + CassetteLine(Ask("add"), reply) + "\n");
  auto replay = Replay();
  Completion completion = replay->Complete(Ask("add"));
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.text, "def add(): pass");
  EXPECT_EQ(completion.prompt_tokens, 10);
  EXPECT_EQ(completion.finish_reason, "stop");
  EXPECT_EQ(completion.model, "m");
  EXPECT_EQ(completion.attempts, 0);
  EXPECT_EQ(completion.cost_usd, 0);
  EXPECT_EQ(replay->unused(), 1u);
}

TEST_F(CassetteTest, ARequestWithoutModelMatchesTheModelItWasRecordedWith) {
  WriteCassette(CassetteLine(Ask("add", "gpt-test"), OkCompletion("recorded")) + "\n");
  Completion completion = Replay()->Complete(Ask("add", ""));
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.model, "gpt-test");
}

TEST_F(CassetteTest, HandWrittenEntriesMatchBySubstringsInFileOrder) {
  WriteCassette(R"({"match": ["relu", "fuse"], "reply": "fused relu"}
{"match": "matmul", "reply": {"text": "tiled matmul", "prompt_tokens": 3}}

{"reply": "anything"}
{"reply": {"outcome": "rate_limited", "error": "scripted failure"}}
)");
  auto replay = Replay();
  EXPECT_EQ(replay->Complete(Ask("please fuse this relu")).text, "fused relu");
  EXPECT_EQ(replay->Complete(Ask("a relu alone")).text, "anything");  // the fuse+relu entry is used
  Completion matmul = replay->Complete(Ask("a matmul"));
  EXPECT_EQ(matmul.text, "tiled matmul");
  EXPECT_EQ(matmul.prompt_tokens, 3);
  Completion failure = replay->Complete(Ask("what now"));
  EXPECT_EQ(failure.outcome, CallOutcome::kRateLimited);
  EXPECT_EQ(failure.error, "scripted failure");
  EXPECT_EQ(replay->Complete(Ask("a matmul")).outcome, CallOutcome::kNoRecording);
}

TEST_F(CassetteTest, EntriesForTheSameRequestAreServedOnceEachInOrder) {
  WriteCassette(CassetteLine(Ask("add"), OkCompletion("first")) + "\n" + CassetteLine(Ask("add"), OkCompletion("second")) + "\n");
  auto replay = Replay();
  EXPECT_EQ(replay->Complete(Ask("add")).text, "first");
  EXPECT_EQ(replay->Complete(Ask("add")).text, "second");
  EXPECT_EQ(replay->Complete(Ask("add")).outcome, CallOutcome::kNoRecording);
}

TEST_F(CassetteTest, MissNamesTheCassetteAndTheStartOfTheLastUserMessage) {
  WriteCassette(R"({"match": "never", "reply": "x"})" "\n");
  std::string question = "please " + std::string(300, 'q');
  Completion miss = Replay()->Complete(Ask(question));
  EXPECT_EQ(miss.outcome, CallOutcome::kNoRecording);
  EXPECT_NE(miss.error.find(path_.string()), std::string::npos) << miss.error;
  EXPECT_NE(miss.error.find(question.substr(0, 200) + "..."), std::string::npos) << miss.error;
  EXPECT_EQ(miss.error.find(question.substr(0, 201)), std::string::npos);
}

struct MalformedCase {
  std::string name;
  std::string line;
  std::string expected;
};

void PrintTo(const MalformedCase& c, std::ostream* out) { *out << c.name; }

class MalformedCassetteTest : public CassetteTest, public ::testing::WithParamInterface<MalformedCase> {};

TEST_P(MalformedCassetteTest, IsInvalidArgumentNamingTheLine) {
  WriteCassette(std::string(R"({"reply": "fine"})") + "\n" + GetParam().line + "\n");
  auto replay = ReplayProvider::Open(path_);
  ASSERT_FALSE(replay.ok());
  EXPECT_EQ(replay.status().code(), StatusCode::kInvalidArgument);
  const std::string& message = replay.status().message();
  EXPECT_NE(message.find(path_.string() + " line 2"), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Lines, MalformedCassetteTest,
    ::testing::Values(MalformedCase{"NotJson", R"({"reply": "x")", "not a JSON object"},
                      MalformedCase{"NoReply", R"({"match": "x"})", "no \"reply\""},
                      MalformedCase{"UnknownOutcome", R"({"reply": {"outcome": "great"}})", "unknown call outcome"},
                      MalformedCase{"UnknownKey", R"({"mach": "x", "reply": "y"})", "unknown key \"mach\""},
                      MalformedCase{"BadRole", R"({"messages": [{"role": "bot", "content": "x"}], "reply": "y"})", "bot"},
                      MalformedCase{"BadTokens", R"({"reply": {"text": "x", "prompt_tokens": "many"}})", "prompt_tokens"}),
    [](const auto& info) { return info.param.name; });

TEST_F(CassetteTest, MissingCassetteIsNotFound) {
  EXPECT_EQ(ReplayProvider::Open(path_).status().code(), StatusCode::kNotFound);
}

TEST_F(CassetteTest, AnUnfinishedLastLineIsSkippedAndCutBeforeAppending) {
  WriteCassette(CassetteLine(Ask("add"), OkCompletion("kept")) + "\n" + R"({"request_hash": "abc", "rep)");
  auto entries = LoadCassette(path_);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(entries->size(), 1u);
  auto writer = CassetteWriter::Open(path_);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append(Ask("mul"), OkCompletion("new")).ok());
  auto reloaded = LoadCassette(path_);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().ToString();
  ASSERT_EQ(reloaded->size(), 2u);
  EXPECT_EQ((*reloaded)[1].reply.text, "new");
}

TEST_F(CassetteTest, AHandWrittenLastLineWithoutNewlineIsKept) {
  WriteCassette(R"({"reply": "hand written"})");
  auto writer = CassetteWriter::Open(path_);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append(Ask("x"), OkCompletion("recorded")).ok());
  auto entries = LoadCassette(path_);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(entries->size(), 2u);
}

TEST(MaskNumbersTest, EveryNumberBecomesAHash) {
  EXPECT_EQ(MaskNumbers("max error 1.5e-03 at [3, 17]; time -0.25 ms"), "max error # at [#, #]; time # ms");
  EXPECT_EQ(MaskNumbers("x-1 and 2.x and 1e and +7"), "x-# and #.x and #e and #");
  EXPECT_EQ(MaskNumbers("no numbers"), "no numbers");
}

CompletionRequest Tagged(const std::string& question, int round) {
  CompletionRequest request = Ask(question);
  request.tag = {"writer", "whole", 1, round, "repair"};
  return request;
}

TEST_F(CassetteTest, ATaggedCallMatchesItsRecordingWhenOnlyQuotedNumbersDiffer) {
  WriteCassette(CassetteLine(Tagged("max error 0.125 at [3, 4]", 2), OkCompletion("round 2 reply")) + "\n" +
                CassetteLine(Tagged("max error 0.5 at [1, 1]", 3), OkCompletion("round 3 reply")) + "\n");
  auto replay = Replay();
  // Another run quotes other numbers: found by its tag and masked prompt, in its own round.
  EXPECT_EQ(replay->Complete(Tagged("max error 0.25 at [7, 9]", 3)).text, "round 3 reply");
  EXPECT_EQ(replay->Complete(Tagged("max error 0.0625 at [0, 2]", 2)).text, "round 2 reply");
}

TEST_F(CassetteTest, ATaggedCallWithOtherWordsOrAnotherTagIsNotMatched) {
  WriteCassette(CassetteLine(Tagged("max error 0.125 at [3, 4]", 2), OkCompletion("round 2 reply")) + "\n");
  auto replay = Replay();
  EXPECT_EQ(replay->Complete(Tagged("timed out after 10 s", 2)).outcome, CallOutcome::kNoRecording);
  EXPECT_EQ(replay->Complete(Tagged("max error 0.5 at [3, 4]", 3)).outcome, CallOutcome::kNoRecording);
  EXPECT_EQ(replay->Complete(Ask("max error 0.5 at [3, 4]")).outcome, CallOutcome::kNoRecording);  // untagged
  EXPECT_TRUE(replay->Complete(Tagged("max error 0.5 at [3, 4]", 2)).ok());
}

std::string LongPrompt(const std::string& feedback) {
  std::string prompt = "# Task: repair ModelNew\n";
  for (int line = 0; line < 40; ++line) prompt += "line " + std::to_string(line) + " of the program\n";
  return prompt + "Failing input sets:\n" + feedback + "\nTolerance: allclose\n";
}

TEST_F(CassetteTest, ATaggedCallMatchesItsRecordingWhenAFewLinesOfALongPromptSayOtherWords) {
  // The evaluator describes where bad elements are in words that change from run to run.
  WriteCassette(CassetteLine(Tagged(LongPrompt("rows: every row; columns: 3 of 16 columns, from 0 to 9"), 2),
                             OkCompletion("round 2 reply")) + "\n");
  auto replay = Replay();
  EXPECT_EQ(replay->Complete(Tagged(LongPrompt("rows: rows 4 to 9 only; columns: every column"), 3)).outcome,
            CallOutcome::kNoRecording);  // another round
  EXPECT_EQ(replay->Complete(Tagged(LongPrompt("rows: rows 4 to 9 only; columns: every column"), 2)).text,
            "round 2 reply");
}

TEST_F(CassetteTest, ATaggedCallWhosePromptDiffersInManyLinesIsNotMatched) {
  WriteCassette(CassetteLine(Tagged(LongPrompt("a"), 2), OkCompletion("round 2 reply")) + "\n");
  auto replay = Replay();
  std::string other_task = LongPrompt("a");
  for (const char* word : {"line", "of", "the"}) {
    for (size_t at = other_task.find(word); at != std::string::npos; at = other_task.find(word, at + 2)) {
      other_task.replace(at, 1, "L");
    }
  }
  EXPECT_EQ(replay->Complete(Tagged(other_task, 2)).outcome, CallOutcome::kNoRecording);
}

TEST_F(CassetteTest, AnExactMatchWinsOverATaggedOne) {
  WriteCassette(CassetteLine(Tagged("max error 0.125", 2), OkCompletion("first")) + "\n" +
                CassetteLine(Tagged("max error 0.5", 2), OkCompletion("second")) + "\n");
  auto replay = Replay();
  EXPECT_EQ(replay->Complete(Tagged("max error 0.5", 2)).text, "second");
  EXPECT_EQ(replay->Complete(Tagged("max error 0.75", 2)).text, "first");
}

TEST_F(CassetteTest, RecordThenReplayRoundTrips) {
  int call = 0;
  auto inner = std::make_unique<FunctionProvider>(
      [&call](const CompletionRequest& request) {
        if (call++ == 1) {
          Completion failed = FailedCompletion(CallOutcome::kRateLimited, "HTTP 429");
          failed.attempts = 5;
          return failed;
        }
        Completion completion = OkCompletion("answer to " + request.messages.back().content, 7, 9);
        completion.finish_reason = "stop";
        return completion;
      },
      "openai", "gpt-test");
  auto recorder = RecordingProvider::Open(path_, std::move(inner));
  ASSERT_TRUE(recorder.ok()) << recorder.status().ToString();
  std::vector<Completion> live;
  for (const char* question : {"add", "mul", "sub"}) live.push_back((*recorder)->Complete(Ask(question, "")));
  EXPECT_EQ(Lines().size(), 3u);

  auto replay = Replay();
  for (size_t i = 0; i < 3; ++i) {
    Completion replayed = replay->Complete(Ask(std::vector<std::string>{"add", "mul", "sub"}[i], ""));
    EXPECT_EQ(replayed.outcome, live[i].outcome) << i;
    EXPECT_EQ(replayed.text, live[i].text) << i;
    EXPECT_EQ(replayed.error, live[i].error) << i;
    EXPECT_EQ(replayed.prompt_tokens, live[i].prompt_tokens) << i;
    EXPECT_EQ(replayed.completion_tokens, live[i].completion_tokens) << i;
    EXPECT_EQ(replayed.finish_reason, live[i].finish_reason) << i;
    EXPECT_EQ(replayed.model, "gpt-test") << i;
  }
}

TEST_F(CassetteTest, CachedProviderServesRecordedCallsWithoutCallingTheModel) {
  WriteCassette(CassetteLine(Ask("add", "gpt-test"), OkCompletion("from the cassette")) + "\n" +
                CassetteLine(Ask("mul", "gpt-test"), FailedCompletion(CallOutcome::kTimeout, "slow")) + "\n");
  auto inner = std::make_unique<FunctionProvider>(
      [](const CompletionRequest& request) { return OkCompletion("live " + request.messages.back().content); },
      "openai", "gpt-test");
  FunctionProvider* model = inner.get();
  auto cached = CachedProvider::Open(path_, std::move(inner));
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();

  EXPECT_EQ((*cached)->Complete(Ask("add", "")).text, "from the cassette");
  EXPECT_TRUE(model->requests().empty());
  EXPECT_EQ((*cached)->Complete(Ask("mul", "")).text, "live mul");  // a recorded failure is called again
  EXPECT_EQ((*cached)->Complete(Ask("add", "")).text, "live add");  // the recording was used once
  EXPECT_EQ(model->requests().size(), 2u);
  EXPECT_EQ(model->requests()[0].model, "gpt-test");
  EXPECT_EQ((*cached)->served_from_cassette(), 1);
  EXPECT_EQ(Lines().size(), 4u);

  // Resuming again serves every paid call from the file.
  auto fresh_inner = std::make_unique<FunctionProvider>(
      [](const CompletionRequest&) { return OkCompletion("should not be needed"); }, "openai", "gpt-test");
  FunctionProvider* fresh_model = fresh_inner.get();
  auto resumed = CachedProvider::Open(path_, std::move(fresh_inner));
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ((*resumed)->Complete(Ask("mul", "")).text, "live mul");
  EXPECT_EQ((*resumed)->Complete(Ask("add", "")).text, "from the cassette");
  EXPECT_EQ((*resumed)->Complete(Ask("add", "")).text, "live add");
  EXPECT_TRUE(fresh_model->requests().empty());
}

TEST_F(CassetteTest, CachedProviderStartsFromAMissingCassette) {
  auto cached = CachedProvider::Open(path_, std::make_unique<FunctionProvider>(
                                                [](const CompletionRequest&) { return OkCompletion("live"); }));
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  EXPECT_EQ((*cached)->Complete(Ask("add")).text, "live");
  EXPECT_EQ(Lines().size(), 1u);
}

TEST_F(CassetteTest, ConcurrentRecordingWritesWholeLines) {
  auto inner = std::make_unique<FunctionProvider>([](const CompletionRequest& request) {
    return OkCompletion(std::string(2000, 'x') + request.messages.back().content);
  });
  auto recorder = RecordingProvider::Open(path_, std::move(inner));
  ASSERT_TRUE(recorder.ok());
  constexpr int kThreads = 8, kCallsEach = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsEach; ++i) (*recorder)->Complete(Ask(std::to_string(t) + "-" + std::to_string(i)));
    });
  }
  for (auto& thread : threads) thread.join();
  auto entries = LoadCassette(path_);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), static_cast<size_t>(kThreads * kCallsEach));
  std::set<std::string> hashes;
  for (const CassetteEntry& entry : *entries) {
    hashes.insert(entry.request_hash);
    EXPECT_EQ(entry.reply.text, std::string(2000, 'x') + entry.messages.back().content);
  }
  EXPECT_EQ(hashes.size(), entries->size());
}

}  // namespace
}  // namespace kforge
