#include "agents/writer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "agents/live_status.h"
#include "core/files.h"
#include "fakes.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Which writer sent a request, from its temperature (0.2, 0.4667, 0.7333, 1.0 for four writers).
int WriterOf(const CompletionRequest& request, int writers) {
  return 1 + static_cast<int>(std::lround((request.temperature - 0.2) / 0.8 * (writers - 1)));
}

class WriterPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = *MakeTempDir(fs::temp_directory_path(), "kforge-pool-test-");
    auto library = PromptLibrary::Load(fs::path(KFORGE_SOURCE_DIR) / "prompts");
    ASSERT_TRUE(library.ok()) << library.status().ToString();
    prompts_.emplace(std::move(library).value());
    brief_.task.name = "level1/03_softmax";
    brief_.task.source = "class Model(nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, -1)\n";
    brief_.device = "cuda:0";
    brief_.target = TargetDescription("cuda:0", "NVIDIA H200");
  }
  void TearDown() override { RemoveTreeQuietly(run_); }

  PoolResult Run(PoolOptions options) {
    WriterPool pool(options, brief_, *prompts_, provider_, judge_, run_,
                    [this](const AttemptRecord& attempt, const PoolProgress& progress) {
                      EXPECT_FALSE(in_callback_.exchange(true)) << "progress callbacks overlapped";
                      progress_.push_back(progress);
                      attempts_seen_.push_back(attempt);
                      in_callback_ = false;
                    });
    return pool.Run();
  }

  fs::path run_;
  std::optional<PromptLibrary> prompts_;
  WriterBrief brief_;
  ScriptedProvider provider_;
  MarkerJudge judge_;
  std::atomic<bool> in_callback_{false};
  std::vector<PoolProgress> progress_;
  std::vector<AttemptRecord> attempts_seen_;
};

TEST(WriterSettingsFor, SpreadsTemperaturesAndVariants) {
  PoolOptions options;
  options.writers = 4;
  std::vector<double> temperatures;
  for (int i = 1; i <= 4; ++i) {
    WriterSettings settings = WriterSettingsFor(options, i);
    EXPECT_EQ(settings.index, i);
    EXPECT_EQ(settings.variant, i - 1);
    temperatures.push_back(settings.temperature);
  }
  EXPECT_DOUBLE_EQ(temperatures.front(), 0.2);
  EXPECT_DOUBLE_EQ(temperatures.back(), 1.0);
  EXPECT_NEAR(temperatures[1], 0.2 + 0.8 / 3, 1e-12);
  options.writers = 1;
  EXPECT_DOUBLE_EQ(WriterSettingsFor(options, 1).temperature, 0.6);
}

TEST_F(WriterPoolTest, FourWritersInParallelAndTheFastestWins) {
  // Writer w: round 1 fails to compile, round 2 is accepted at w x 0.5, then no gain.
  provider_.AnswerWith([](const CompletionRequest& request) {
    int writer = WriterOf(request, 4);
    std::string prompt = LastUserMessage(request.messages);
    if (prompt.find("# Task: write") != std::string::npos) return OkReply(ProgramReply("compile_error"));
    if (prompt.find("# Task: repair") != std::string::npos) {
      return OkReply(ProgramReply("accepted " + std::to_string(0.5 * writer)));
    }
    return OkReply(ProgramReply("wrong_output"));
  });
  PoolOptions options;
  options.max_rounds = 6;
  PoolResult result = Run(options);

  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  ASSERT_TRUE(result.best.has_value());
  EXPECT_EQ(result.best->writer, 4);
  EXPECT_EQ(result.best->round, 2);
  EXPECT_DOUBLE_EQ(result.best->speedup(), 2.0);
  EXPECT_EQ(result.best->path, run_ / "writer4" / "round2" / "candidate.py");
  // Each writer: write, repair, two speedup rounds without gain.
  EXPECT_EQ(result.attempts.size(), 16u);
  EXPECT_EQ(attempts_seen_.size(), 16u);
  EXPECT_EQ(result.writer_stops.size(), 4u);
  for (const std::string& stop : result.writer_stops) EXPECT_EQ(stop, "accepted, and 2 speedup rounds in a row brought no gain");
  EXPECT_EQ(result.totals.attempts, 16);
  EXPECT_EQ(result.totals.accepted, 4);
  EXPECT_EQ(result.totals.tokens, 16 * 1500);
  EXPECT_NEAR(result.totals.cost_usd, 0.16, 1e-9);
  ASSERT_TRUE(progress_.back().best_speedup.has_value());
  EXPECT_DOUBLE_EQ(*progress_.back().best_speedup, 2.0);
  EXPECT_EQ(result.Summary(), "16 attempts by 4 writers: 4 accepted, 4 compile_error, 8 wrong_output; best 2.00x (writer 4, round 2)");
  for (int writer = 1; writer <= 4; ++writer) EXPECT_TRUE(fs::exists(run_ / ("writer" + std::to_string(writer)) / "round4"));

  auto summary = ParseJson(*ReadFile(run_ / "summary.json"), "summary.json");
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ((*summary)["attempts"].size(), 16u);
  EXPECT_EQ((*summary)["best"]["writer"], 4);
}

TEST_F(WriterPoolTest, NothingAcceptedGivesTheAttemptsSummary) {
  provider_.Then(OkReply("Let me think about this."));
  provider_.AnswerWith([](const CompletionRequest&) { return OkReply(ProgramReply("memoization")); });
  PoolOptions options;
  options.writers = 2;
  options.max_rounds = 2;
  PoolResult result = Run(options);
  EXPECT_FALSE(result.best.has_value());
  EXPECT_EQ(result.Summary(), "4 attempts by 2 writers: 1 no_code_block, 3 rejected_hack; no accepted candidate");
  EXPECT_EQ(result.stop_reason, "");
}

TEST_F(WriterPoolTest, AttemptBudgetIsSharedByAllWriters) {
  provider_.AnswerWith([](const CompletionRequest&) { return OkReply(ProgramReply("wrong_output")); });
  PoolOptions options;
  options.max_rounds = 10;
  options.budget.max_attempts = 5;
  PoolResult result = Run(options);
  EXPECT_EQ(result.attempts.size(), 5u);
  EXPECT_EQ(result.stop_reason, "the limit of 5 attempts is reached");
}

TEST_F(WriterPoolTest, UntimedAcceptanceStopsThePool) {
  brief_.device = "cpu";
  provider_.AnswerWith([](const CompletionRequest&) { return OkReply(ProgramReply("accepted cpu")); });
  PoolOptions options;
  options.writers = 3;
  PoolResult result = Run(options);
  ASSERT_TRUE(result.best.has_value());
  EXPECT_GE(result.attempts.size(), 1u);
  EXPECT_LE(result.attempts.size(), 3u);  // writers already in a round finish it
  EXPECT_NE(result.stop_reason.find("mean nothing"), std::string::npos);
  EXPECT_NE(result.Summary().find("(not timed)"), std::string::npos);
}

TEST_F(WriterPoolTest, AnExceptionInOneWriterDoesNotCrossItsThread) {
  provider_.AnswerWith([](const CompletionRequest& request) -> Completion {
    if (WriterOf(request, 2) == 1) throw std::runtime_error("provider bug");
    return OkReply(ProgramReply("wrong_output"));
  });
  PoolOptions options;
  options.writers = 2;
  options.max_rounds = 2;
  PoolResult result = Run(options);
  EXPECT_EQ(result.status.code(), StatusCode::kInternal);
  EXPECT_NE(result.status.message().find("provider bug"), std::string::npos);
  EXPECT_NE(result.stop_reason.find("provider bug"), std::string::npos);
}

TEST_F(WriterPoolTest, StopFromOutsideEndsEveryWriter) {
  PoolOptions options;
  options.max_rounds = 50;
  WriterPool pool(options, brief_, *prompts_, provider_, judge_, run_);
  std::atomic<int> calls{0};
  provider_.AnswerWith([&](const CompletionRequest&) {
    if (++calls == 6) pool.Stop("interrupted by the user");
    return OkReply(ProgramReply("wrong_output"));
  });
  PoolResult result = pool.Run();
  EXPECT_EQ(result.stop_reason, "interrupted by the user");
  EXPECT_LE(result.attempts.size(), 9u);  // at most one round more per other writer
}

TEST_F(WriterPoolTest, AFatalCallFailureStopsEveryWriterAndIsNamed) {
  provider_.AnswerWith([](const CompletionRequest& request) {
    if (request.tag.writer == 2) return FailedReply(CallOutcome::kQuotaExceeded, "HTTP 429: insufficient_quota");
    return OkReply(ProgramReply("wrong_output"));
  });
  PoolOptions options;
  options.writers = 2;
  options.max_rounds = 1000;
  PoolResult result = Run(options);
  EXPECT_EQ(result.fatal_call, "quota_exceeded: HTTP 429: insufficient_quota");
  EXPECT_LT(result.attempts.size(), 1001u);  // writer 1 stopped too (LimitedProvider sends nothing more)
  EXPECT_EQ(result.ToJson()["fatal_call"], result.fatal_call);
}

TEST_F(WriterPoolTest, TransientFailuresAreNotFatal) {
  provider_.AnswerWith([](const CompletionRequest&) { return FailedReply(CallOutcome::kServerError, "HTTP 503"); });
  PoolOptions options;
  options.writers = 1;
  options.max_rounds = 2;
  PoolResult result = Run(options);
  EXPECT_EQ(result.attempts.size(), 2u);
  EXPECT_EQ(result.fatal_call, "");
}

TEST_F(WriterPoolTest, EveryCallIsTaggedWithItsPoolWriterRoundAndKind) {
  provider_.AnswerWith([](const CompletionRequest&) { return OkReply(ProgramReply("compile_error")); });
  PoolOptions options;
  options.writers = 1;
  options.max_rounds = 2;
  options.scope = "group_3";
  Run(options);
  std::vector<CompletionRequest> requests = provider_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].tag, (CallTag{"writer", "group_3", 1, 1, "write"}));
  EXPECT_EQ(requests[1].tag, (CallTag{"writer", "group_3", 1, 2, "repair"}));
}

// Two writers: writer 1 is accepted at 2.0x in its first round; writer 2's first reply waits
// until writer 1 asks for its second round (so writer 1's candidate is judged) and is wrong.
// Under beam, writer 2 continues from writer 1's program; under greedy it repairs its own.
TEST_F(WriterPoolTest, BeamWritersContinueFromTheFastestAndGreedyOnesDoNot) {
  for (Strategy strategy : {Strategy::kBeam, Strategy::kGreedy}) {
    SCOPED_TRACE(ToString(strategy));
    ScriptedProvider provider;
    std::atomic<bool> first_judged{false};
    std::mutex mutex;
    std::vector<std::string> second_writer;
    provider.AnswerWith([&](const CompletionRequest& request) {
      int writer = WriterOf(request, 2);
      if (writer == 1) {
        if (request.tag.round >= 2) first_judged = true;
        return OkReply(ProgramReply(request.tag.round == 1 ? "accepted 2.0" : "accepted 1.0"));
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        second_writer.push_back(LastUserMessage(request.messages));
      }
      for (int i = 0; i < 5000 && !first_judged; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return OkReply(ProgramReply(request.tag.round == 1 ? "wrong_output" : "accepted 1.5"));
    });
    PoolOptions options;
    options.writers = 2;
    options.max_rounds = 2;
    options.strategy = strategy;
    options.beam_width = 1;
    WriterPool pool(options, brief_, *prompts_, provider, judge_, run_ / ToString(strategy), {});
    PoolResult result = pool.Run();
    ASSERT_TRUE(result.status.ok()) << result.status.ToString();
    ASSERT_EQ(second_writer.size(), 2u);
    const std::string& round2 = second_writer[1];
    if (strategy == Strategy::kBeam) {
      EXPECT_NE(round2.find("# Task: make ModelNew faster"), std::string::npos) << round2;
      EXPECT_NE(round2.find("# accepted 2.0"), std::string::npos) << "continues from writer 1's program";
      EXPECT_EQ(result.search["kept"].size(), 1u);
      EXPECT_EQ(result.search["kept"][0]["writer"], 1);
    } else {
      EXPECT_NE(round2.find("# Task: repair"), std::string::npos) << round2;
      EXPECT_NE(round2.find("# wrong_output"), std::string::npos) << "repairs its own program";
      EXPECT_TRUE(result.search["kept"].empty());
    }
    ASSERT_TRUE(result.best.has_value());
    EXPECT_EQ(result.best->writer, 1);
    EXPECT_DOUBLE_EQ(result.best->speedup(), 2.0);
  }
}

TEST(SearchBoard, KeepsTheFastestAndTellsEachWriterTheOthersFailures) {
  SearchBoard board(Strategy::kBeam, 2);
  EXPECT_FALSE(board.StartFor(1, 1).has_value());
  auto accepted = [](int writer, double speedup, const std::string& source) {
    AcceptedCandidate candidate;
    candidate.writer = writer;
    candidate.source = source;
    candidate.evaluation = MakeEvaluation(VerdictKind::kAccepted, "correct", speedup);
    return candidate;
  };
  board.Offer(accepted(1, 1.2, "a"));
  board.Offer(accepted(2, 2.0, "b"));
  board.Offer(accepted(3, 1.5, "c"));
  board.Offer(accepted(4, 2.0, "b"));  // the same program again: kept once
  EXPECT_EQ(board.StartFor(1, 2)->source, "b");
  EXPECT_EQ(board.StartFor(2, 2)->source, "c");
  EXPECT_EQ(board.StartFor(3, 3)->source, "b");  // ranks wrap around the kept ones
  EXPECT_EQ(board.ToJson()["kept"].size(), 2u);

  AttemptRecord wrong;
  wrong.writer = 2;
  wrong.outcome = AttemptOutcome::kJudged;
  wrong.verdict_kind = VerdictKind::kWrongOutput;
  wrong.verdict = "wrong_output";
  wrong.message = "on input set seed0: output 0 differs\nmore";
  board.NoteFailure(wrong);
  board.NoteFailure(wrong);  // one line per distinct verdict
  AttemptRecord infra = wrong;
  infra.verdict_kind = VerdictKind::kInfraError;
  infra.verdict = "infra_error";
  board.NoteFailure(infra);  // kforge's failure says nothing about the program
  EXPECT_EQ(board.FailuresSeenBy(1), "- writer 2: wrong_output: on input set seed0: output 0 differs\n");
  EXPECT_EQ(board.FailuresSeenBy(2), "");

  SearchBoard greedy(Strategy::kGreedy, 2);
  greedy.Offer(accepted(1, 2.0, "a"));
  greedy.NoteFailure(wrong);
  EXPECT_FALSE(greedy.StartFor(1, 2).has_value());
  EXPECT_EQ(greedy.FailuresSeenBy(1), "");
  EXPECT_EQ(ParseStrategy("beam"), Strategy::kBeam);
  EXPECT_EQ(ParseStrategy("evolve"), Strategy::kEvolve);
  EXPECT_FALSE(ParseStrategy("random").has_value());
}

AcceptedCandidate Accepted(int writer, int round, double speedup, const std::string& source) {
  AcceptedCandidate candidate;
  candidate.writer = writer;
  candidate.round = round;
  candidate.source = source;
  candidate.evaluation = MakeEvaluation(VerdictKind::kAccepted, "correct", speedup);
  return candidate;
}

TEST(SearchBoard, EvolveKeepsIslandsMigratesTheFastestExploresAndRecombines) {
  SearchBoard board(Strategy::kEvolve, 2, /*islands=*/2);
  EXPECT_EQ(board.IslandOf(1), 0);
  EXPECT_EQ(board.IslandOf(2), 1);
  EXPECT_EQ(board.IslandOf(3), 0);  // writers 1 and 3 share an approach, and so an island
  board.Offer(Accepted(1, 1, 1.2, "a1"));
  board.Offer(Accepted(3, 1, 1.5, "a3"));
  board.Offer(Accepted(1, 2, 1.1, "a1b"));  // third on island 0: not kept (width 2)
  board.Offer(Accepted(2, 1, 3.0, "b2"));

  // An odd, non-exploring round: the island's own fastest, not the faster one of the other island.
  EXPECT_EQ(board.StartFor(1, 1)->source, "a3");
  // Every third round explores the island's runner-up.
  EXPECT_EQ(board.StartFor(3, 3)->source, "a1");
  // A migration round: the fastest of all (island 1) joins island 0 and is its parent.
  EXPECT_EQ(board.StartFor(1, 2)->source, "b2");
  EXPECT_EQ(board.StartFor(1, 1)->source, "b2") << "the migrant now leads island 0";
  // Island 1 has nothing faster to take in.
  EXPECT_EQ(board.StartFor(2, 2)->source, "b2");

  // Recombination, on its rounds only: another island's fastest program that is not the parent.
  EXPECT_FALSE(board.MateFor(2, 2, Accepted(2, 1, 3.0, "b2")).has_value());
  auto mate = board.MateFor(2, 3, Accepted(2, 1, 3.0, "b2"));
  ASSERT_TRUE(mate.has_value());
  EXPECT_EQ(mate->source, "a3") << "island 0's fastest other than the migrant b2";

  Json json = board.ToJson();
  EXPECT_EQ(json["strategy"], "evolve");
  EXPECT_EQ(json["migrations"], 1);
  EXPECT_EQ(json["islands"].size(), 2u);
  std::vector<AcceptedCandidate> kept = board.Kept();
  ASSERT_EQ(kept.size(), 2u) << "island 0 keeps the migrant and a3 (width 2): a1 fell out";
  EXPECT_EQ(kept[0].source, "b2");
  EXPECT_EQ(kept[1].source, "a3");

  SearchBoard beam(Strategy::kBeam, 2);
  beam.Offer(Accepted(1, 1, 1.2, "a"));
  EXPECT_FALSE(beam.MateFor(2, 3, Accepted(2, 1, 3.0, "b")).has_value()) << "beam never recombines";
}

TEST_F(WriterPoolTest, EvolveWritersRecombineAcrossIslands) {
  ScriptedProvider provider;
  provider.AnswerWith([&](const CompletionRequest& request) {
    int writer = WriterOf(request, 2);
    if (request.tag.round == 1) return OkReply(ProgramReply(writer == 1 ? "accepted 1.5" : "accepted 2.0 island b"));
    if (request.tag.kind == "recombine") return OkReply(ProgramReply("accepted 4.0 recombined"));
    // Round 2 waits until both first programs are judged (and on the board) before it ends, so
    // that round 3 finds a candidate on the other island to recombine with.
    for (int i = 0; i < 5000 && judge_.calls() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return OkReply(ProgramReply("wrong_output"));
  });
  PoolOptions options;
  options.writers = 2;
  options.max_rounds = 3;
  options.speedup_patience = 5;
  options.strategy = Strategy::kEvolve;
  options.beam_width = 2;
  WriterPool pool(options, brief_, *prompts_, provider, judge_, run_ / "evolve", {});
  PoolResult result = pool.Run();
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  int recombined = 0, of_both_first = 0;
  for (const CompletionRequest& request : provider.requests()) {
    if (request.tag.kind != "recombine") continue;
    ++recombined;
    EXPECT_EQ(request.tag.round, 3);
    std::string text = LastUserMessage(request.messages);
    EXPECT_NE(text.find("# Task: combine two accepted versions"), std::string::npos) << text;
    // The first recombination to start can only see the two first programs; a later one may see
    // the first's result instead.
    if (text.find("# accepted 1.5") != std::string::npos && text.find("# accepted 2.0 island b") != std::string::npos) {
      ++of_both_first;
    }
  }
  EXPECT_GE(recombined, 1) << "round 3 of a writer recombines its island's best with the other island's";
  EXPECT_GE(of_both_first, 1);
  ASSERT_TRUE(result.best.has_value());
  EXPECT_DOUBLE_EQ(result.best->speedup(), 4.0);
  EXPECT_EQ(result.search["strategy"], "evolve");
  EXPECT_EQ(result.search["island_count"], 2);
}

TEST(LiveStatus, SaysWhatTheCallsDoAndEstimatesTheTimeLeft) {
  FakeClock clock;
  auto store = Store::OpenInMemory(clock);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->StartRun("run-1", "optimize", Json::object()).ok());
  auto activity = std::make_shared<CallActivity>(clock);
  {
    LiveStatus live(store->get(), "run-1", activity, /*budget_s=*/0, clock);
    live.PoolStarted("whole", 8);
    activity->Queued();
    activity->Queued();
    activity->Started();
    activity->RetryWait(12, CallOutcome::kRateLimited);
    clock.Advance(30);
    PoolProgress progress;
    progress.attempts = 2;
    progress.accepted = 1;
    progress.best_speedup = 1.4;
    progress.tokens = 3000;
    progress.cost_usd = 0.02;
    live.Attempted("whole", progress);
    // Two attempts in 30 s: six more at that pace.
    EXPECT_EQ(live.Current().Brief(), "1 call(s) in flight, 1 queued; about 2 min left");
    auto stored = (*store)->GetRunStatus("run-1");
    ASSERT_TRUE(stored.ok() && stored->has_value());
    EXPECT_EQ((**stored)["state"], "running");
    EXPECT_EQ((**stored)["best_speedup"], 1.4);
    EXPECT_EQ((**stored)["calls"]["waits_so_far"], 1);
    EXPECT_DOUBLE_EQ((**stored)["eta_s"].get<double>(), 90.0);

    activity->RetryWait(20, CallOutcome::kServerError);
    EXPECT_EQ(live.Current().Brief(), "1 call(s) in flight, 1 queued; a retry waits 20 s (server_error); about 2 min left");
    live.PoolEnded("whole");
    live.PoolStarted("relu", 4);  // the next pool counts on from the first
    RunStatus next = live.Current();
    EXPECT_EQ(next.attempts, 2);
    EXPECT_EQ(next.best_speedup, 1.4);
    EXPECT_EQ(next.scopes, std::vector<std::string>{"relu"});
    EXPECT_EQ(next.planned_attempts, 4);
    EXPECT_DOUBLE_EQ(next.eta_s.value_or(-1), 60.0) << "four attempts at the stage's pace of 15 s each";

    // Parts of a decomposition run at once: both scopes, their planned attempts summed.
    live.PoolStarted("softmax", 4);
    PoolProgress softmax;
    softmax.attempts = 1;
    softmax.best_speedup = 2.5;
    live.Attempted("softmax", softmax);
    RunStatus both = live.Current();
    EXPECT_EQ(both.scopes, (std::vector<std::string>{"relu", "softmax"}));
    EXPECT_EQ(both.planned_attempts, 8);
    EXPECT_EQ(both.attempts, 3);
    EXPECT_EQ(both.best_speedup, 2.5);
    RunStatus read = RunStatus::FromJson(both.ToJson());
    EXPECT_EQ(read.ToJson(), both.ToJson()) << "what is stored reads back the same";
    EXPECT_NE(read.Words().find("3 of 8 attempt(s) in relu, softmax, 1 accepted, best 2.50x"), std::string::npos)
        << read.Words();
  }
  auto left = (*store)->GetRunStatus("run-1");
  ASSERT_TRUE(left.ok() && left->has_value());
  EXPECT_EQ((**left)["state"], "stopped");  // never finished: a reader must not wait for it

  LiveStatus finished(store->get(), "run-1", nullptr, 0, clock);
  finished.Finish("finished");
  EXPECT_EQ((**(*store)->GetRunStatus("run-1"))["state"], "finished");
  EXPECT_TRUE((**(*store)->GetRunStatus("run-1"))["calls"].is_null());
}

}  // namespace
}  // namespace kforge
