#include "eval/evaluator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "core/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// A worker that answers each op from a script and records every request.
class FakeWorker : public WorkerClient {
 public:
  using Handler = std::function<Result<Json>(const Json&)>;
  std::map<std::string, Handler> handlers;
  std::vector<std::pair<std::string, Json>> calls;

  Result<Json> Call(const std::string& op, const Json& fields, double) override {
    calls.emplace_back(op, fields);
    auto it = handlers.find(op);
    if (it == handlers.end()) return Status::Internal("fake worker has no handler for " + op);
    return it->second(fields);
  }
  int Count(const std::string& op) const {
    int count = 0;
    for (const auto& call : calls) count += call.first == op;
    return count;
  }
};

class FakeWorkers : public WorkerSource {
 public:
  FakeWorker trusted, zygote;
  Result<WorkerClient*> Trusted() override { return static_cast<WorkerClient*>(&trusted); }
  Result<WorkerClient*> Zygote() override { return static_cast<WorkerClient*>(&zygote); }
};

Json Samples(double value, int count) { return Json(std::vector<double>(count, value)); }

// A prepare reply as the trusted worker writes it for an evaluation with a candidate.
Json PrepareReply(Json sets, Json outputs, double input_bytes, double output_bytes) {
  return Json{{"sets", std::move(sets)}, {"outputs", std::move(outputs)}, {"flops", 0}, {"input_bytes", input_bytes},
              {"output_bytes", output_bytes}, {"parameter_bytes", 0}, {"mutated_buffers", Json::array()},
              {"second_size", {{"grown_inputs", Json::array()}, {"leading_dim", nullptr}}}, {"cpu_sizes_applied", true},
              {"memory", {{"candidate_limit_bytes", 1 << 30}, {"fits", true}}}, {"state", Json::object()},
              {"shared", Json::object()}};
}

class EvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = *MakeTempDir(fs::temp_directory_path(), "kforge-evaluator-test-");
    candidate_ = root_ / "candidate.py";
    ASSERT_TRUE(WriteFile(candidate_, "class ModelNew: pass\n").ok());
    task_.path = root_ / "task.py";
    task_.name = "level1/task";
    task_.source = "class Model: pass\n";
    task_.hash = "taskhash";
    options_.exchange_root = root_ / "exchange";
    options_.gpu_name = "";
    ScriptHonestRun();
  }
  void TearDown() override { RemoveTreeQuietly(root_); }

  void ScriptHonestRun() {
    workers_.trusted.handlers["static_check"] = [](const Json&) -> Result<Json> { return Json{{"findings", Json::array()}}; };
    workers_.trusted.handlers["prepare"] = [](const Json&) -> Result<Json> {
      return PrepareReply({{{"name", "seed0"}, {"file", "set_seed0.pt"}}, {{"name", "seed1"}, {"file", "set_seed1.pt"}}},
                          {{{"shape", {4}}, {"dtype", "float32"}, {"dense", true}}}, 16, 16);
    };
    workers_.zygote.handlers["run_candidate"] = [this](const Json&) -> Result<Json> {
      return Json{{"exit_code", 0}, {"signal", nullptr}, {"killed_for", nullptr}, {"wall_s", 0.1},
                  {"peak_rss_bytes", 1}, {"stdout_tail", ""}, {"stderr_tail", ""}, {"tampered_paths", Json::array()},
                  {"peak_processes", 2}, {"sandbox_violations", Json::array()}, {"isolation_seen", Json::object()},
                  {"private_dir", (root_ / "private").string()},
                  {"result", {{"findings", Json::array()}, {"error", nullptr},
                              {"outputs", {{"seed0", "out_seed0.pt"}, {"seed1", "out_seed1.pt"}}},
                              {"timing", {{"method", "cuda_events"}, {"meaningful", true}, {"samples_ms", Samples(1.0, 20)},
                                          {"host_ms", Samples(1.01, 20)}, {"late_ms", Samples(0.001, 20)},
                                          {"kept", Json::array()}}},
                              {"provenance", {{"authored_share", 1.0}, {"library_compute_names", Json::array()}}}}}};
    };
    workers_.trusted.handlers["compare"] = [](const Json&) -> Result<Json> {
      return Json{{"sets", {{"seed0", {{"passed", true}}}, {"seed1", {{"passed", true}}}}}, {"timed", Json::array()},
                  {"probes", Json::object()}, {"repeat", nullptr}, {"input_mutations", Json::array()}, {"resized", nullptr},
                  {"handoff_gaps_ms", Json::array()}};
    };
    workers_.trusted.handlers["time_reference"] = [](const Json&) -> Result<Json> {
      return Json{{"samples_ms", Samples(2.0, 20)}, {"iteration_ms", Samples(2.2, 20)}, {"meaningful", true}};
    };
    workers_.trusted.handlers["release"] = [](const Json&) -> Result<Json> { return Json::object(); };
  }

  Evaluation Evaluate() {
    Evaluator evaluator(workers_, options_);
    auto result = evaluator.Evaluate(task_, candidate_);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? *result : Evaluation{};
  }

  fs::path root_, candidate_;
  TaskFile task_;
  EvalOptions options_;
  FakeWorkers workers_;
};

TEST_F(EvaluatorTest, HonestCandidateIsAcceptedWithASignificantSpeedup) {
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "accepted");
  ASSERT_TRUE(evaluation.speedup.has_value());
  EXPECT_NEAR(evaluation.speedup->speedup, 2.0, 1e-9);
  EXPECT_TRUE(evaluation.speedup->significant);
  EXPECT_EQ(workers_.trusted.Count("release"), 1);
}

// The time spent timing the reference (a task pays it once, whatever its candidates) is its own
// field, so what the rest of an evaluation cost can be told apart.
TEST_F(EvaluatorTest, SaysHowMuchOfItsTimeWentToTimingTheReference) {
  workers_.trusted.handlers["time_reference"] = [](const Json&) -> Result<Json> {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return Json{{"samples_ms", Samples(2.0, 20)}, {"iteration_ms", Samples(2.2, 20)}, {"meaningful", true}};
  };
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "accepted");
  EXPECT_GE(evaluation.reference_timing_s, 0.2);
  EXPECT_LT(evaluation.reference_timing_s, evaluation.duration_s);
  EXPECT_EQ(evaluation.reference_timing_s, evaluation.evidence["step_s"]["reference_timing"].get<double>());

  options_.timing = false;  // nothing timed, nothing spent on the reference's timing
  EXPECT_EQ(Evaluate().reference_timing_s, 0);
}

TEST_F(EvaluatorTest, CandidateIsCopiedIntoAFreshExchangeFolderThatIsRemovedAfterwards) {
  std::string seen_copy;
  workers_.trusted.handlers["static_check"] = [&](const Json& request) -> Result<Json> {
    auto copied = ReadFile(request["candidate_path"].get<std::string>());
    seen_copy = copied.ok() ? *copied : "";
    return Json{{"findings", Json::array()}};
  };
  Evaluate();
  EXPECT_EQ(seen_copy, "class ModelNew: pass\n");
  EXPECT_TRUE(fs::is_empty(root_ / "exchange"));
}

TEST_F(EvaluatorTest, SeedsAreFreshForEveryEvaluation) {
  Evaluate();
  Evaluate();
  std::vector<Json> seeds;
  for (const auto& [op, request] : workers_.trusted.calls) {
    if (op == "prepare") seeds.push_back(request["seeds"]);
  }
  ASSERT_EQ(seeds.size(), 2u);
  EXPECT_EQ(seeds[0].size(), 3u);
  EXPECT_NE(seeds[0], seeds[1]);
}

TEST_F(EvaluatorTest, StaticFindingEndsTheEvaluationBeforeAnyCandidateRuns) {
  workers_.trusted.handlers["static_check"] = [](const Json&) -> Result<Json> {
    return Json{{"findings", {{{"check", "threads"}, {"line", 3}, {"message", "imports threading"}}}}};
  };
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "rejected_hack(threads)");
  EXPECT_EQ(workers_.zygote.Count("run_candidate"), 0);
  EXPECT_EQ(workers_.trusted.Count("prepare"), 0);
}

TEST_F(EvaluatorTest, BrokenTaskIsTheUsersErrorNotAVerdict) {
  workers_.trusted.handlers["prepare"] = [](const Json&) -> Result<Json> {
    return Status::InvalidArgument("task.py:3: get_inputs() raised ValueError: bad");
  };
  Evaluator evaluator(workers_, options_);
  auto result = evaluator.Evaluate(task_, candidate_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("get_inputs"), std::string::npos);
}

TEST_F(EvaluatorTest, SandboxBreakdownIsACrashNotAnInfraError) {
  workers_.zygote.handlers["run_candidate"] = [](const Json&) -> Result<Json> {
    return Status::Unavailable("the worker closed its pipe");
  };
  EXPECT_EQ(Evaluate().verdict.ToString(), "crashed");
}

TEST_F(EvaluatorTest, TrustedWorkerFailureIsAnInfraError) {
  workers_.trusted.handlers["compare"] = [](const Json&) -> Result<Json> { return Status::Internal("boom"); };
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "infra_error");
  EXPECT_NE(evaluation.verdict.message.find("comparing outputs"), std::string::npos);
}

TEST_F(EvaluatorTest, StrictModeRejectsLibraryComputeAndPartialModeAcceptsIt) {
  auto honest = workers_.zygote.handlers["run_candidate"];
  workers_.zygote.handlers["run_candidate"] = [honest](const Json& request) -> Result<Json> {
    auto reply = honest(request);
    (*reply)["result"]["provenance"]["library_compute_names"] = {"aten::mm"};
    return reply;
  };
  EXPECT_EQ(Evaluate().verdict.ToString(), "rejected_hack(library_compute)");
  options_.mode = ProvenanceMode::kPartial;
  EXPECT_EQ(Evaluate().verdict.ToString(), "accepted");
}

TEST_F(EvaluatorTest, TimeBelowTheRooflineFloorIsRejectedOnAKnownGpu) {
  options_.gpu_name = "NVIDIA H200";
  workers_.trusted.handlers["prepare"] = [](const Json&) -> Result<Json> {
    // 48 GB must move: at 4.8 TB/s that takes at least 10 ms, but the candidate claims 1 ms.
    return PrepareReply({{{"name", "seed0"}, {"file", "set_seed0.pt"}}}, Json::array(), 24e9, 24e9);
  };
  EXPECT_EQ(Evaluate().verdict.ToString(), "rejected_hack(roofline)");
}

TEST_F(EvaluatorTest, TimedOutProcessGivesTimeout) {
  auto honest = workers_.zygote.handlers["run_candidate"];
  workers_.zygote.handlers["run_candidate"] = [honest](const Json& request) -> Result<Json> {
    auto reply = honest(request);
    (*reply)["result"] = nullptr;
    (*reply)["killed_for"] = "timeout";
    (*reply)["signal"] = 9;
    (*reply)["exit_code"] = nullptr;
    return reply;
  };
  EXPECT_EQ(Evaluate().verdict.ToString(), "timeout");
}

// A key the zygote no longer sends switches no check off: the report is read once, strictly.
TEST_F(EvaluatorTest, AZygoteReportWithoutAKeyIsAnInfraErrorNamingIt) {
  auto honest = workers_.zygote.handlers["run_candidate"];
  workers_.zygote.handlers["run_candidate"] = [honest](const Json& request) -> Result<Json> {
    auto reply = honest(request);
    reply->erase("sandbox_violations");
    return reply;
  };
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "infra_error");
  EXPECT_NE(evaluation.verdict.message.find("lacks 'sandbox_violations'"), std::string::npos) << evaluation.verdict.message;
}

// Timing without the host or late times would switch the timer and side-stream checks off: such a
// report is refused, as is one whose lists differ in length.
TEST_F(EvaluatorTest, TimingWithoutHostOrLateTimesIsRefused) {
  auto honest = workers_.zygote.handlers["run_candidate"];
  for (const char* key : {"host_ms", "late_ms"}) {
    workers_.zygote.handlers["run_candidate"] = [honest, key](const Json& request) -> Result<Json> {
      auto reply = honest(request);
      (*reply)["result"]["timing"].erase(key);
      return reply;
    };
    Evaluation evaluation = Evaluate();
    EXPECT_EQ(evaluation.verdict.ToString(), "infra_error") << key;
    EXPECT_NE(evaluation.verdict.message.find(std::string("lacks '") + key + "'"), std::string::npos) << evaluation.verdict.message;
  }
  workers_.zygote.handlers["run_candidate"] = [honest](const Json& request) -> Result<Json> {
    auto reply = honest(request);
    (*reply)["result"]["timing"]["late_ms"] = Samples(0.001, 3);
    return reply;
  };
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "infra_error");
  EXPECT_NE(evaluation.verdict.message.find("20 samples but 20 host and 3 late times"), std::string::npos)
      << evaluation.verdict.message;
}

// A clean run must say which kernels computed its profiled call: without provenance strict mode
// could not see library compute, so its absence is tampering; without the library names, an error.
TEST_F(EvaluatorTest, ACleanRunWithoutProvenanceIsTampering) {
  auto honest = workers_.zygote.handlers["run_candidate"];
  workers_.zygote.handlers["run_candidate"] = [honest](const Json& request) -> Result<Json> {
    auto reply = honest(request);
    (*reply)["result"].erase("provenance");
    return reply;
  };
  EXPECT_EQ(Evaluate().verdict.ToString(), "rejected_hack(result_tamper)");
  workers_.zygote.handlers["run_candidate"] = [honest](const Json& request) -> Result<Json> {
    auto reply = honest(request);
    (*reply)["result"]["provenance"].erase("library_compute_names");
    return reply;
  };
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "infra_error");
  EXPECT_NE(evaluation.verdict.message.find("lacks 'library_compute_names'"), std::string::npos) << evaluation.verdict.message;
}

// The reference's timing without its whole iterations would switch the untimed-work check off.
TEST_F(EvaluatorTest, AReferenceTimingWithoutItsIterationsIsAnInfraError) {
  workers_.trusted.handlers["time_reference"] = [](const Json&) -> Result<Json> {
    return Json{{"samples_ms", Samples(2.0, 20)}, {"meaningful", true}};
  };
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "infra_error");
  EXPECT_NE(evaluation.verdict.message.find("lacks 'iteration_ms'"), std::string::npos) << evaluation.verdict.message;
}

// The same for the trusted worker's prepare reply: without the reference's bytes the roofline
// check would compute a floor of zero and never fire; the candidate does not run at all.
TEST_F(EvaluatorTest, APrepareReplyWithoutAKeyIsAnInfraErrorNamingIt) {
  auto honest = workers_.trusted.handlers["prepare"];
  workers_.trusted.handlers["prepare"] = [honest](const Json& request) -> Result<Json> {
    auto reply = honest(request);
    reply->erase("output_bytes");
    return reply;
  };
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "infra_error");
  EXPECT_NE(evaluation.verdict.message.find("lacks 'output_bytes'"), std::string::npos) << evaluation.verdict.message;
  EXPECT_EQ(workers_.zygote.Count("run_candidate"), 0);
}

// A baseline source that keeps what it is given in memory.
class MemoryBaselines : public BaselineSource {
 public:
  std::map<std::string, Json> kept;
  std::optional<Json> Find(const BaselineKey& key) override {
    auto it = kept.find(key.Digest());
    return it == kept.end() ? std::nullopt : std::optional<Json>(it->second);
  }
  void Keep(const BaselineKey& key, const Json& timing) override { kept[key.Digest()] = timing; }
};

// `kforge baseline` measures ahead what an evaluation would: the evaluation then takes the
// reference's eager and torch.compile timings from the store and asks the worker for neither.
TEST_F(EvaluatorTest, BaselineTimingsAreKeptForLaterEvaluations) {
  MemoryBaselines baselines;
  options_.baselines = &baselines;
  options_.baseline_environment = "{\"gpu\":\"test\"}";
  options_.time_compiled_reference = true;
  Evaluator evaluator(workers_, options_);
  auto baseline = evaluator.Baseline(task_, /*max_autotune=*/false);
  ASSERT_TRUE(baseline.ok()) << baseline.status().ToString();
  EXPECT_EQ((*baseline)["modes"]["eager"]["kept"], true);
  EXPECT_EQ(baselines.kept.size(), 2u);
  EXPECT_EQ(workers_.trusted.Count("time_reference"), 2);
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.verdict.ToString(), "accepted");
  EXPECT_EQ(workers_.trusted.Count("time_reference"), 2);
  EXPECT_EQ(evaluation.evidence["baselines"]["eager"]["from_store"], true);
  EXPECT_EQ(evaluation.evidence["baselines"]["compile"]["from_store"], true);
  // Without an environment to key them by, nothing is kept.
  options_.baseline_environment.clear();
  MemoryBaselines none;
  options_.baselines = &none;
  ASSERT_TRUE(Evaluator(workers_, options_).Baseline(task_, false).ok());
  EXPECT_TRUE(none.kept.empty());
}

// A second baseline with a source that reuses what it holds prepares nothing and times nothing:
// it prints what is stored. A mode not stored (max-autotune here) is the only one measured.
TEST_F(EvaluatorTest, BaselineTakesWhatTheStoreHoldsAndMeasuresOnlyTheRest) {
  MemoryBaselines baselines;
  options_.baselines = &baselines;
  options_.baseline_environment = "{\"gpu\":\"test\"}";
  ASSERT_TRUE(Evaluator(workers_, options_).Baseline(task_, false).ok());
  ASSERT_EQ(workers_.trusted.Count("time_reference"), 2);
  Evaluator again(workers_, options_);
  auto stored = again.Baseline(task_, false);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ((*stored)["modes"]["eager"]["from_store"], true);
  EXPECT_EQ((*stored)["modes"]["compile"]["from_store"], true);
  EXPECT_NEAR((*stored)["modes"]["compile"]["ms"]["median"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(workers_.trusted.Count("prepare"), 1);
  EXPECT_EQ(workers_.trusted.Count("time_reference"), 2);
  auto more = again.Baseline(task_, true);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(workers_.trusted.Count("time_reference"), 3);
  EXPECT_EQ(workers_.trusted.calls.back().first, "release");
  EXPECT_EQ((*more)["modes"]["compile_max_autotune"]["kept"], true);
  EXPECT_FALSE((*more)["modes"]["compile_max_autotune"].contains("from_store"));
}

// Where torch.compile's graphs came from (the workspace's compile cache, or compiled anew) is in
// the evidence beside its compile time.
TEST_F(EvaluatorTest, TheEvidenceSaysWhetherTorchCompileCompiledFromTheCache) {
  options_.time_compiled_reference = true;
  workers_.trusted.handlers["time_reference"] = [](const Json& request) -> Result<Json> {
    Json reply = {{"samples_ms", Samples(2.0, 20)}, {"iteration_ms", Samples(2.2, 20)}, {"meaningful", true}};
    if (request["mode"] == "compile") {
      reply["compile_s"] = 3.5;
      reply["compile_cache"] = {{"hits", 1}, {"misses", 0}};
    }
    return reply;
  };
  Evaluation evaluation = Evaluate();
  EXPECT_EQ(evaluation.evidence["timing"]["reference_compile_s"], 3.5);
  EXPECT_EQ(evaluation.evidence["timing"]["reference_compile_cache"], (Json{{"hits", 1}, {"misses", 0}}));
}

}  // namespace
}  // namespace kforge
