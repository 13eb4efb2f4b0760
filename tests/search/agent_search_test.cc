// The LLM stage's search with fakes for the model and the judge: a decomposition's parts are
// searched at once, evolve crosses the parts' candidates over in several compositions and keeps
// the fastest, and a budget is held over pools that run together.
#include "search/agent_search.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <algorithm>
#include <map>
#include <thread>

#include "core/files.h"
#include "fakes.h"
#include "llm/pricing.h"
#include "ir_test_util.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using ir::testing::AddInputOk;
using ir::testing::AddOk;
using ir::testing::F32;
using ir::testing::Ref;

// relu(relu(x @ w) @ v) with w 4x4 and v 4x8: two matmul groups on different shapes, so two parts.
ir::Graph TwoDistinctMatmuls() {
  ir::GraphBuilder b("two_mm");
  ir::ValueId x = AddInputOk(b, "x", {4, 4});
  ir::ValueId w = AddInputOk(b, "w", {4, 4}, 1);
  ir::ValueId v = AddInputOk(b, "v", {4, 8}, 2);
  ir::ValueId mm1 = AddOk(b, "mm1", "aten.mm.default", {Ref(x), Ref(w)}, {F32({4, 4})});
  ir::ValueId relu1 = AddOk(b, "relu1", "aten.relu.default", {Ref(mm1)}, {F32({4, 4})});
  ir::ValueId mm2 = AddOk(b, "mm2", "aten.mm.default", {Ref(relu1), Ref(v)}, {F32({4, 8})});
  ir::ValueId relu2 = AddOk(b, "relu2", "aten.relu.default", {Ref(mm2)}, {F32({4, 8})});
  b.AddOutput({relu2, 0});
  return std::move(b).Build();
}

// Judges a part's candidate by its marker (MarkerJudge), and a composition by the programs in it:
// 2x, and 3x when it holds writer 2's program of the second part (slower alone, faster composed).
class CompositionJudge : public CandidateJudge {
 public:
  Result<Evaluation> Judge(const TaskFile& task, const fs::path& candidate) override {
    if (candidate.filename().string().rfind("composed", 0) != 0) return parts_.Judge(task, candidate);
    ++compositions_;
    ASSIGN_OR_RETURN(std::string source, ReadFile(candidate));
    bool crossed = source.find("part 2 by writer 2") != std::string::npos;
    return MakeEvaluation(VerdictKind::kAccepted, "correct on 8 input sets", crossed ? 3.0 : 2.0);
  }
  int compositions() const { return compositions_; }

 private:
  MarkerJudge parts_;
  std::atomic<int> compositions_{0};
};

class AgentSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = *MakeTempDir(fs::temp_directory_path(), "kforge-search-test-");
    auto library = PromptLibrary::Load(fs::path(KFORGE_SOURCE_DIR) / "prompts");
    ASSERT_TRUE(library.ok()) << library.status().ToString();
    prompts_.emplace(std::move(library).value());
    graph_ = TwoDistinctMatmuls();
    plan_ = passes::PlanFusion(graph_);
    ASSERT_EQ(plan_.groups.size(), 2u);
    start_.graph = &graph_;
    start_.plan = &plan_;
    brief_.task.name = "two_mm";
    brief_.task.source = "class Model(nn.Module):\n    pass\n";
    brief_.device = "cuda:0";
    settings_.llm = "scripted:fake";
    settings_.route = "decompose";
    settings_.workers = 2;
    settings_.rounds = 1;
  }
  void TearDown() override { RemoveTreeQuietly(folder_); }

  // The provider behind a RoutedProvider, as the CLI wires it.
  RoutedProvider& Routed(std::unique_ptr<Provider> inner) {
    std::vector<RoutedProvider::Route> routes;
    routes.push_back({"scripted:fake", std::make_unique<LimitedProvider>(std::move(inner), LimitOptions{}), {}});
    routed_ = std::make_unique<RoutedProvider>(std::move(routes));
    return *routed_;
  }

  Result<SearchOutcome> Search(RoutedProvider& provider, CandidateJudge& judge) {
    SearchServices services{*prompts_, provider, judge,
                            [](const std::string& source, const std::string& prefix) -> Result<std::string> {
                              return "# renamed " + prefix + "\n" + source;
                            },
                            nullptr, 0, true};
    return RunAgentSearch(settings_, start_, brief_, folder_, services);
  }

  // Each writer's program for the part of `scope`, marked with its part's place and the writer.
  std::string PartProgram(const CompletionRequest& request) {
    int part = request.tag.scope == plan_.groups[0].name ? 1 : 2;
    // Writer 1 is faster alone; writer 2's program of part 2 composes better.
    double speed = request.tag.writer == 1 ? 2.0 : 1.8;
    return ProgramReply(fmt::format("accepted {} part {} by writer {}", speed, part, request.tag.writer));
  }

  fs::path folder_;
  std::optional<PromptLibrary> prompts_;
  ir::Graph graph_ = ir::GraphBuilder("empty").Build();
  passes::FusionPlan plan_;
  AgentStart start_;
  WriterBrief brief_;
  AgentSettings settings_;
  std::unique_ptr<RoutedProvider> routed_;
};

TEST_F(AgentSearchTest, ThePartsOfADecompositionAreSearchedAtOnce) {
  // Every call waits (up to 5 s) until a call of the other part is in flight too: one part after
  // the other, that never happens.
  auto provider = std::make_unique<ScriptedProvider>();
  std::mutex mutex;
  std::map<std::string, int> in_flight;  // by scope
  std::atomic<bool> together{false};
  auto both_in_flight = [&] {
    return in_flight.size() == 2 && std::all_of(in_flight.begin(), in_flight.end(), [](const auto& e) { return e.second > 0; });
  };
  provider->AnswerWith([&](const CompletionRequest& request) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++in_flight[request.tag.scope];
      if (both_in_flight()) together = true;
    }
    for (int i = 0; i < 5000 && !together; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> lock(mutex);
    --in_flight[request.tag.scope];
    return OkReply(PartProgram(request));
  });
  // Two calls at once, as a provider's concurrency limit would allow.
  std::vector<RoutedProvider::Route> routes;
  LimitOptions options;
  options.pool = std::make_shared<ConcurrencyPool>("llm:scripted", 4);
  routes.push_back({"scripted:fake", std::make_unique<LimitedProvider>(std::move(provider), options), {}});
  RoutedProvider routed(std::move(routes));
  CompositionJudge judge;
  auto outcome = Search(routed, judge);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_TRUE(together) << "the second part's writers called only after the first part's had finished";
  ASSERT_EQ(outcome->report["decomposition"]["parts"].size(), 2u);
  for (const Json& part : outcome->report["decomposition"]["parts"]) EXPECT_TRUE(part["accepted"].get<bool>());
  ASSERT_TRUE(outcome->best_evaluation.has_value());
  EXPECT_EQ(judge.compositions(), 1) << "greedy composes the fastest program of each part, once";
  EXPECT_DOUBLE_EQ(outcome->best_evaluation->speedup->speedup, 2.0);
  EXPECT_TRUE(fs::exists(folder_ / "parts" / plan_.groups[0].name / "task.py"));
  EXPECT_TRUE(fs::exists(folder_ / "parts" / plan_.groups[1].name / "writer2" / "round1" / "candidate.py"));
}

TEST_F(AgentSearchTest, EvolveCrossesThePartsCandidatesOverAndKeepsTheFastestComposition) {
  settings_.strategy = "evolve";
  auto provider = std::make_unique<ScriptedProvider>();
  provider->AnswerWith([&](const CompletionRequest& request) { return OkReply(PartProgram(request)); });
  RoutedProvider& routed = Routed(std::move(provider));
  CompositionJudge judge;
  auto outcome = Search(routed, judge);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  const Json& decomposition = outcome->report["decomposition"];
  // The fastest of each part, then each part's runner-up swapped in: three compositions.
  EXPECT_EQ(judge.compositions(), 3);
  ASSERT_EQ(decomposition["compositions"].size(), 3u);
  ASSERT_TRUE(outcome->best_evaluation.has_value());
  EXPECT_DOUBLE_EQ(outcome->best_evaluation->speedup->speedup, 3.0) << "the crossover that holds writer 2's part 2";
  ASSERT_TRUE(outcome->best_source.has_value());
  EXPECT_NE(outcome->best_source->find("part 2 by writer 2"), std::string::npos);
  EXPECT_NE(outcome->best_source->find("part 1 by writer 1"), std::string::npos);
  EXPECT_NE(decomposition["composition_chosen"].get<std::string>().find("composed_"), std::string::npos);
}

TEST_F(AgentSearchTest, ATokenBudgetIsHeldOverPartsSearchedAtOnce) {
  settings_.rounds = 4;
  settings_.patience = 4;
  auto provider = std::make_unique<ScriptedProvider>();
  // Nothing is accepted, so every writer would use all its rounds: 2 parts x 2 writers x 4.
  provider->AnswerWith([](const CompletionRequest&) { return OkReply(ProgramReply("wrong_output"), 1000, 500); });
  ScriptedProvider* fake = provider.get();
  RoutedProvider& routed = Routed(std::move(provider));
  CompositionJudge judge;
  SearchServices services{*prompts_, routed, judge, [](const std::string& s, const std::string&) -> Result<std::string> { return s; },
                          nullptr, /*max_tokens=*/4500, true};
  auto outcome = RunAgentSearch(settings_, start_, brief_, folder_, services);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  // Each call spends 1500 tokens; the budget of 4500 is reached after three, and calls already
  // started may finish: far fewer than the 16 that two separate budgets would allow.
  EXPECT_GE(fake->requests().size(), 3u);
  EXPECT_LE(fake->requests().size(), 6u);
  EXPECT_NE(JsonGet<std::string>(outcome->report, "budget_stop", "").find("4500 tokens"), std::string::npos)
      << outcome->report.dump(1);
}

TEST(AgentSettingsTest, RolesAndStrategiesAreCheckedAndRoutedByCallKind) {
  AgentSettings settings;
  settings.llm = "openai:gpt-5-mini";
  settings.strategy = "evolve";
  EXPECT_TRUE(settings.Validate().ok());
  settings.role_llms["optimize"] = "anthropic:claude-opus-4-1";
  settings.role_llms["describe"] = "openai:gpt-5-mini";  // the same as --llm: nothing to route
  std::map<std::string, std::string> specs = settings.SpecsByCallKind();
  EXPECT_EQ(specs, (std::map<std::string, std::string>{{"recombine", "anthropic:claude-opus-4-1"},
                                                       {"speedup", "anthropic:claude-opus-4-1"}}));
  EXPECT_EQ(AgentSettings::FromJson(settings.ToJson()).role_llms, settings.role_llms);
  settings.role_llms["planner"] = "openai:o3";
  Status bad = settings.Validate();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("no role 'planner'"), std::string::npos) << bad.message();
  settings.role_llms.erase("planner");
  settings.strategy = "random";
  EXPECT_NE(settings.Validate().message().find("greedy, beam or evolve"), std::string::npos);
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

// The stage's token budget: a priced model keeps --budget's tokens; a model without a known
// price turns --budget-usd into tokens at the highest listed output price and says so; a command
// provider reports no usage, so dollars cannot be enforced; the tightest model wins.
TEST(StageTokenBudgetTest, DollarsBecomeTokensOnlyForModelsWithoutAPrice) {
  AgentSettings settings;
  settings.budget_tokens = 500000;
  settings.budget_usd = 2.0;
  LlmConfig config;
  std::vector<std::string> notes;
  EXPECT_EQ(StageTokenBudget(settings, {{"openai", "gpt-4o"}}, config, notes), 500000);
  EXPECT_TRUE(notes.empty());

  const double highest = HighestOutputPrice(WithBuiltInPrices(config.prices));
  const auto dollars = static_cast<int64_t>(2.0 / highest * 1e6);
  ASSERT_LT(dollars, 500000);
  EXPECT_EQ(StageTokenBudget(settings, {{"openai", "gpt-4o"}, {"openai", "my-finetune"}}, config, notes), dollars);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("my-finetune has no known price"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("enforced as a budget of " + std::to_string(dollars) + " tokens"), std::string::npos) << notes[0];

  notes.clear();
  config.prices["my-finetune"] = {1.0, 4.0, {}, {}};
  EXPECT_EQ(StageTokenBudget(settings, {{"openai", "my-finetune"}}, config, notes), 500000);
  EXPECT_TRUE(notes.empty());

  settings.budget_tokens = 0;
  EXPECT_EQ(StageTokenBudget(settings, {{"command", "my-agent --json"}}, config, notes), 0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("--budget-usd cannot be enforced"), std::string::npos) << notes[0];
}

}  // namespace
}  // namespace kforge
