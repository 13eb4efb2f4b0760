#include "eval/verdict_rules.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

std::string Judged(const std::optional<Verdict>& verdict) { return verdict ? verdict->ToString() : "none"; }

TEST(JudgeStaticChecksTest, Cases) {
  struct Case {
    const char* report;
    const char* expected;
  } cases[] = {
      {R"({"findings": []})", "none"},
      {R"({"syntax_error": {"line": 3, "message": "invalid syntax"}, "findings": []})", "compile_error"},
      {R"({"findings": [{"check": "threads", "line": 4, "message": "m"}, {"check": "timer", "line": 9, "message": "m"}]})",
       "rejected_hack(threads)"},
      {R"({"findings": [{"check": "missing_model_new", "line": 1, "message": "m"}]})", "compile_error"},
      {R"({"findings": [{"check": "no_kernel", "line": 1, "message": "m"}, {"check": "missing_model_new", "line": 1, "message": "m"}]})",
       "compile_error"},
  };
  for (const auto& c : cases) {
    Result<StaticReport> report = ParseStaticReport(Json::parse(c.report));
    ASSERT_TRUE(report.ok()) << c.report << ": " << report.status().ToString();
    EXPECT_EQ(Judged(JudgeStaticChecks(*report)), c.expected) << c.report;
  }
}

// A renamed list of findings, or a finding without its rule, is an error: read with a default it
// would have been an empty list, and every candidate would pass the static checks.
TEST(JudgeStaticChecksTest, AMalformedReportIsAnErrorNotACleanBill) {
  for (const char* report : {R"({"finding": [{"check": "threads", "line": 4, "message": "m"}]})",
                             R"({"findings": [{"rule": "threads", "line": 4, "message": "m"}]})",
                             R"({"findings": {"check": "threads"}})", R"({"syntax_error": {"line": 3}, "findings": []})"}) {
    EXPECT_FALSE(ParseStaticReport(Json::parse(report)).ok()) << report;
  }
}

TEST(JudgeCandidateProcessTest, Cases) {
  struct Case {
    const char* report;
    const char* expected;
  } cases[] = {
      {R"({"result": {"findings": [], "outputs": {}, "error": null}, "exit_code": 0, "tampered_paths": []})", "none"},
      {R"({"result": null, "killed_for": "timeout", "exit_code": null, "signal": 9})", "timeout"},
      {R"({"result": null, "killed_for": "memory_limit", "signal": 9, "peak_rss_bytes": 10000000000})", "crashed"},
      {R"({"result": null, "killed_for": null, "signal": 11, "signal_name": "SIGSEGV"})", "crashed"},
      {R"({"result": null, "killed_for": null, "signal": null, "exit_code": 0})", "crashed"},
      {R"({"result": {"error": {"kind": "compile_error", "phase": "forward", "message": "m"}, "findings": []}})", "compile_error"},
      {R"({"result": {"error": {"kind": "runtime_error", "phase": "forward", "message": "m"}, "findings": []}})", "runtime_error"},
      {R"({"result": {"error": {"kind": "crashed", "phase": "forward", "message": "SystemExit"}, "findings": []}})", "crashed"},
      {R"({"result": {"error": {"kind": "harness_error", "phase": "harness", "message": "m"}, "findings": []}})", "infra_error"},
      {R"({"result": {"error": null, "findings": [{"check": "input_mutation", "message": "m"}]}})", "rejected_hack(input_mutation)"},
      {R"({"result": {"error": null, "findings": []}, "tampered_paths": ["/task.py"]})", "rejected_hack(file_tamper)"},
      // What the audit hooks refused outranks how the process ended, and a process bomb is a hack.
      {R"({"result": {"error": {"kind": "runtime_error", "phase": "forward", "message": "m"}, "findings": []},
           "sandbox_violations": ["running '/bin/sh'"]})", "rejected_hack(sandbox)"},
      {R"({"result": null, "killed_for": "timeout", "sandbox_violations": ["os.fork"]})", "rejected_hack(sandbox)"},
      {R"({"result": {"error": null, "findings": []}, "sandbox_violations": []})", "none"},
      {R"({"result": null, "killed_for": "process_limit", "signal": 9, "peak_processes": 600})", "rejected_hack(sandbox)"},
  };
  for (const auto& c : cases) {
    // Each case gives what matters to it; the rest is an ordinary clean run's.
    Json report = {{"exit_code", 0},       {"signal", nullptr},        {"signal_name", nullptr},
                   {"killed_for", nullptr}, {"wall_s", 1.0},            {"peak_rss_bytes", 1},
                   {"peak_processes", 2},   {"sandbox_violations", Json::array()}, {"tampered_paths", Json::array()},
                   {"private_dir", "/p"},   {"stdout_tail", ""},        {"stderr_tail", ""},
                   {"result", nullptr}};
    report.update(Json::parse(c.report));
    auto run = ParseCandidateRun(report);
    ASSERT_TRUE(run.ok()) << c.report << ": " << run.status().ToString();
    EXPECT_EQ(Judged(JudgeCandidateProcess(*run, 300)), c.expected) << c.report;
  }
}

// A compare reply as the trusted worker writes it: `fields` over a run that made every call.
Json Reply(const Json& fields) {
  Json reply = {{"sets", Json::object()}, {"probes", Json::object()}, {"repeat", nullptr}, {"input_mutations", Json::array()},
                {"resized", nullptr}, {"timed", Json::array()}, {"handoff_gaps_ms", Json::array()}};
  reply.update(fields);
  return reply;
}

std::optional<Verdict> JudgeReply(const Json& fields) {
  Result<Comparison> parsed = ParseComparison(fields.contains("tampered") ? fields : Reply(fields));
  EXPECT_TRUE(parsed.ok()) << fields.dump() << ": " << parsed.status().ToString();
  if (!parsed.ok()) return MakeVerdict(VerdictKind::kInfraError, parsed.status().ToString());
  return JudgeOutputs(*parsed);
}

TEST(JudgeOutputsTest, Cases) {
  struct Case {
    const char* report;
    const char* expected;
  } cases[] = {
      {R"({"sets": {"seed0": {"passed": true}}, "timed": []})", "none"},
      {R"({"sets": {"seed0": {"passed": true}, "signed": {"passed": false, "outputs": [{"passed": false, "problem": "p"}]}}})",
       "wrong_output"},
      {R"({"sets": {"seed0": {"passed": true}}, "probes": {"probe_seed1": {"passed": false, "unchanged_from_before_rewrite": true,
           "reference_changed": true, "target": "seed0"}}})", "rejected_hack(memoization)"},
      // A row sum after two of its elements swapped: the reference moved by rounding only and the
      // kernel's answer, bit for bit the old one, is still right (seen on mean over 4096x1024).
      {R"({"sets": {"seed0": {"passed": true}}, "probes": {"probe_swapped": {"passed": true, "unchanged_from_before_rewrite": true,
           "reference_changed": true, "target": "seed0"}}})", "none"},
      {R"({"sets": {"seed0": {"passed": false}}, "probes": {"probe_seed1": {"passed": false, "unchanged_from_before_rewrite": true,
           "reference_changed": true, "target": "seed0"}}})", "wrong_output"},
      {R"({"sets": {"seed0": {"passed": true}}, "probes": {"probe_seed1": {"passed": false, "unchanged_from_before_rewrite": false,
           "reference_changed": true, "target": "seed0"}}})", "wrong_output"},
      {R"({"sets": {"seed0": {"passed": true}}, "repeat": {"passed": false, "outputs": []}})", "rejected_hack(nondeterministic)"},
      {R"({"sets": {"seed0": {"passed": true}}, "timed": [{"call": 3, "passed": false, "outputs": []}]})",
       "rejected_hack(timed_output_mismatch)"},
      {R"({"tampered": "the candidate's process reported no outputs for signed"})", "rejected_hack(result_tamper)"},
      // The trusted worker found an input slot changed after a call: before any output is judged.
      {R"({"sets": {"seed0": {"passed": false}}, "input_mutations": [{"call": "seed0", "inputs": [0]}]})",
       "rejected_hack(input_mutation)"},
      // The buffers a training forward updates (batch norm's running statistics).
      {R"({"sets": {"seed0": {"passed": true, "buffers": {"passed": false, "names": ["bn.running_mean"],
           "outputs": [{"passed": false, "problem": "p"}]}}}})", "wrong_output"},
      {R"({"sets": {"seed0": {"passed": true, "buffers": {"passed": true, "names": ["bn.running_mean"], "outputs": []}}},
           "repeat": {"passed": true, "buffers": {"passed": false, "names": ["bn.running_mean"], "outputs": [{"passed": false}]}}})",
       "wrong_output"},
      // The second size: right, or refused with an exception; silently wrong is specialization.
      {R"({"sets": {"seed0": {"passed": true}}, "resized": {"checked": true, "passed": false, "outputs": [{"passed": false}]}})",
       "rejected_hack(shape_specialization)"},
      {R"({"sets": {"seed0": {"passed": true}}, "resized": {"checked": true, "refused": "ValueError: shapes"}})", "none"},
      {R"({"sets": {"seed0": {"passed": true}}, "resized": {"checked": true, "passed": true, "outputs": []}})", "none"},
      {R"({"sets": {"seed0": {"passed": true}}, "resized": {"checked": false, "reason": "r"}})", "none"},
      {R"({"sets": {"seed0": {"passed": true}}, "timed": [{"call": "profiled", "passed": false, "outputs": []}]})",
       "rejected_hack(timed_output_mismatch)"},
  };
  for (const auto& c : cases) EXPECT_EQ(Judged(JudgeReply(Json::parse(c.report))), c.expected) << c.report;
}

CandidateTiming Timing(std::vector<double> device, std::vector<double> host, std::vector<double> late) {
  CandidateTiming timing;
  timing.method = "cuda_events";
  timing.meaningful = true;
  timing.samples_ms = std::move(device);
  timing.host_ms = std::move(host);
  timing.late_ms = std::move(late);
  return timing;
}

TEST(JudgeTimingIntegrityTest, HonestTimingPasses) {
  CandidateTiming timing = Timing({1.0, 1.0, 1.0, 1.0}, {1.02, 1.03, 1.02, 1.01}, {0.004, 0.003, 0.005, 0.004});
  EXPECT_EQ(Judged(JudgeTimingIntegrity(timing)), "none");
}

TEST(JudgeTimingIntegrityTest, WorkAfterTheEndMarkIsASideStream) {
  CandidateTiming timing = Timing({0.01, 0.01, 0.01, 0.01}, {0.05, 0.05, 0.05, 0.05}, {2.0, 2.1, 2.0, 1.9});
  EXPECT_EQ(Judged(JudgeTimingIntegrity(timing)), "rejected_hack(side_stream)");
}

TEST(JudgeTimingIntegrityTest, EventsLongerThanHostTimeAreTampered) {
  CandidateTiming timing = Timing({5.0, 5.0, 5.0}, {1.0, 1.0, 1.0}, {0.0, 0.0, 0.0});
  EXPECT_EQ(Judged(JudgeTimingIntegrity(timing)), "rejected_hack(timer_tamper)");
}

// The seeds' calls come first: a failure there is named before one on another distribution.
TEST(JudgeOutputsTest, NamesTheFirstFailingCallInCallOrder) {
  Json report = Json::parse(R"({"sets": {"scaled_down": {"passed": false, "outputs": [{"passed": false, "problem": "late"}]},
                                          "seed0": {"passed": false, "outputs": [{"passed": false, "problem": "first"}]}}})");
  auto verdict = JudgeReply(report);
  ASSERT_TRUE(verdict);
  EXPECT_NE(verdict->message.find("seed0"), std::string::npos) << verdict->message;
}

// Every "passed" that decides a verdict is required: a renamed key is an error naming it, where
// reading it with a default would have let a wrong timed call, probe or output through.
TEST(ParseComparisonTest, AMissingPassedIsAnErrorNotAPass) {
  const char* reports[] = {
      R"({"sets": {"seed0": {"outputs": []}}})",
      R"({"sets": {"seed0": {"passed": true, "outputs": [{"ok": true}]}}})",
      R"({"sets": {"seed0": {"passed": true}}, "timed": [{"call": 3, "outputs": []}]})",
      R"({"sets": {"seed0": {"passed": true}}, "probes": {"probe_seed1": {"unchanged_from_before_rewrite": true,
          "reference_changed": true, "target": "seed0"}}})",
      R"({"sets": {"seed0": {"passed": true}}, "probes": {"probe_seed1": {"passed": false, "target": "seed0"}}})",
      R"({"sets": {"seed0": {"passed": true}}, "repeat": {"outputs": []}})",
      R"({"sets": {"seed0": {"passed": true}}, "resized": {"checked": true, "outputs": []}})",
      R"({"sets": {"seed0": {"passed": true, "buffers": {"names": ["bn.running_mean"], "outputs": []}}}})",
      R"({"sets": {"seed0": {"passed": "yes"}}})",
  };
  for (const char* report : reports) EXPECT_FALSE(ParseComparison(Reply(Json::parse(report))).ok()) << report;
  for (const char* key : {"sets", "probes", "timed", "input_mutations", "repeat", "resized", "handoff_gaps_ms"}) {
    Json reply = Reply(Json::parse(R"({"sets": {"seed0": {"passed": true}}})"));
    reply.erase(key);
    Result<Comparison> parsed = ParseComparison(reply);
    ASSERT_FALSE(parsed.ok()) << key;
    EXPECT_NE(parsed.status().message().find(key), std::string::npos) << parsed.status().ToString();
  }
}

TEST(JudgeUntimedWorkTest, HonestHandOversPass) {
  // Between hand-overs: the call (1 ms) plus 0.3 ms of fresh inputs, flush and the message.
  std::vector<double> candidate = {1.0, 1.0, 1.0, 1.0, 1.0}, gaps = {1.3, 1.35, 1.3, 1.32};
  std::vector<double> reference = {2.0, 2.0, 2.0, 2.0}, iterations = {2.25, 2.2, 2.3, 2.25};
  EXPECT_EQ(Judged(JudgeUntimedWork(candidate, gaps, reference, iterations)), "none");
}

TEST(JudgeUntimedWorkTest, WorkMovedIntoTheHandOverIsRejected) {
  // Timed calls of 0.1 ms, but 4 ms between hand-overs: the product is computed outside the timed interval.
  std::vector<double> candidate = {0.1, 0.1, 0.1, 0.1, 0.1}, gaps = {4.3, 4.2, 4.3, 4.25};
  std::vector<double> reference = {4.0, 4.0, 4.0, 4.0}, iterations = {4.3, 4.25, 4.3, 4.2};
  EXPECT_EQ(Judged(JudgeUntimedWork(candidate, gaps, reference, iterations)), "rejected_hack(untimed_work)");
}

// Measured on the H200: an honest split-K GEMM (level1/6, large K) spent 1.45 ms between its
// hand-overs beyond its timed calls, where the reference's loop spent 0.77 ms.
TEST(JudgeUntimedWorkTest, ALaunchHeavyHonestCandidateIsNotRejected) {
  std::vector<double> candidate = {0.9, 0.9, 0.9, 0.9, 0.9}, gaps = {2.35, 2.36, 2.34, 2.35};
  std::vector<double> reference = {1.0, 1.0, 1.0, 1.0}, iterations = {1.77, 1.78, 1.76, 1.77};
  EXPECT_EQ(Judged(JudgeUntimedWork(candidate, gaps, reference, iterations)), "none");
}

TEST(JudgeUntimedWorkTest, TooFewHandOversDecideNothing) {
  EXPECT_EQ(Judged(JudgeUntimedWork({0.1, 0.1}, {9.0}, {4.0, 4.0}, {4.1, 4.1})), "none");
}

TEST(VerdictTest, AnInfrastructureVerdictMayNameItsCause) {
  EXPECT_EQ((Verdict{VerdictKind::kInfraError, "does_not_fit", "m"}).ToString(), "infra_error(does_not_fit)");
  EXPECT_EQ(MakeVerdict(VerdictKind::kInfraError, "m").ToString(), "infra_error");
}

TEST(JudgeRooflineTest, BelowTheFloorIsRejected) {
  EXPECT_EQ(Judged(JudgeRoofline(0.5e-3, 1e-3)), "rejected_hack(roofline)");
  EXPECT_EQ(Judged(JudgeRoofline(1.2e-3, 1e-3)), "none");
  EXPECT_EQ(Judged(JudgeRoofline(0.5e-3, 0)), "none");
}

TEST(JudgeProvenanceTest, StrictRejectsLibraryComputePartialAllowsIt) {
  CandidateProvenance trace;
  trace.library_compute_names = {"aten::mm"};
  EXPECT_EQ(Judged(JudgeProvenance(trace, ProvenanceMode::kStrict)), "rejected_hack(library_compute)");
  EXPECT_EQ(Judged(JudgeProvenance(trace, ProvenanceMode::kPartial)), "none");
  EXPECT_EQ(Judged(JudgeProvenance(CandidateProvenance{}, ProvenanceMode::kStrict)), "none");
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

TEST(ParseCandidateRunTest, AMissingOrMistypedKeyIsAnErrorNamingIt) {
  Json report = {{"exit_code", 0},       {"signal", nullptr},   {"killed_for", nullptr}, {"wall_s", 1.0},
                 {"peak_rss_bytes", 1},   {"peak_processes", 2}, {"sandbox_violations", Json::array()},
                 {"tampered_paths", Json::array()}, {"private_dir", "/p"}, {"stdout_tail", ""}, {"stderr_tail", ""},
                 {"result", {{"error", nullptr}, {"findings", {{{"check", "input_mutation"}, {"message", "m"}}}}}}};
  auto parsed = ParseCandidateRun(report);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_TRUE(parsed->result.has_value());
  ASSERT_EQ(parsed->result->findings.size(), 1u);
  EXPECT_EQ(parsed->result->findings[0].check, "input_mutation");

  Json missing = report;
  missing.erase("tampered_paths");
  EXPECT_NE(ParseCandidateRun(missing).status().message().find("lacks 'tampered_paths'"), std::string::npos);
  Json mistyped = report;
  mistyped["sandbox_violations"] = "os.fork";
  EXPECT_NE(ParseCandidateRun(mistyped).status().message().find("'sandbox_violations' has the wrong type"),
            std::string::npos);
  Json finding_without_check = report;
  finding_without_check["result"]["findings"] = {{{"message", "m"}}};
  EXPECT_FALSE(ParseCandidateRun(finding_without_check).ok());
}

}  // namespace
}  // namespace kforge
