// Feedback from real evaluations: tests/agents/data holds Evaluation::ToJson() objects the
// evaluator produced (cpu_*: this repository's kforge on the CPU with corpus and hand-made
// candidates for level1/01_relu; gpu_*: the "evaluation" of bench reports from an H200).
#include "agents/feedback.h"

#include <gtest/gtest.h>

#include "agents/check_explanations.h"
#include "core/files.h"
#include "fakes.h"

namespace kforge {
namespace {

Json LoadEvaluation(const std::string& name) {
  auto text = ReadFile(std::filesystem::path(KFORGE_AGENTS_TEST_DATA) / (name + ".json"));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  auto json = ParseJson(text.ok() ? *text : "{}", name);
  EXPECT_TRUE(json.ok());
  return json.ok() ? *json : Json::object();
}

void ExpectContains(const std::string& text, const std::vector<std::string>& needles) {
  for (const std::string& needle : needles) EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n---\n" << text;
}

TEST(Feedback, CompileErrorShowsTheErrorAndOnlyTheCandidatesFrames) {
  std::string text = FeedbackFromJson(LoadEvaluation("cpu_compile_error_relu"));
  ExpectContains(text, {"Verdict: compile_error\n", "has no attribute 'relu'", "File \"candidate.py\", line 18, in relu_kernel",
                        "tl.store(out_ptr + offsets, tl.relu(x), mask=mask)", "File \"candidate.py\", line 28, in forward"});
  EXPECT_EQ(text.find("harness.py"), std::string::npos) << text;
  EXPECT_EQ(text.find("site-packages"), std::string::npos) << text;
}

TEST(Feedback, SyntaxErrorFromTheStaticChecks) {
  std::string text = FeedbackFromJson(LoadEvaluation("cpu_syntax_error_relu"));
  EXPECT_EQ(text, "Verdict: compile_error\nsyntax error at line 19: expected ':'\n");
}

TEST(Feedback, RuntimeErrorShowsTheFailingLine) {
  std::string text = FeedbackFromJson(LoadEvaluation("cpu_runtime_error_relu"));
  ExpectContains(text, {"Verdict: runtime_error", "shape '[-1, 3, 7]' is invalid for input of size 4096",
                        "y = x.view(-1, 3, 7)"});
}

TEST(Feedback, WrongOutputNamesSetOutputErrorsAndWorstValues) {
  std::string text = FeedbackFromJson(LoadEvaluation("cpu_wrong_output_relu"));
  ExpectContains(text, {"Verdict: wrong_output",
                        "- seed0 (the task's own input distribution; inputs float32[16, 256]):",
                        "output 0 float32[16, 256]: max abs error 0.4997, max rel error 0.8577, 4.62e+03x the tolerance; "
                        "worst at [8, 221]: expected 0.4997154, got 0",
                        "Passing input sets: scaled_up, shifted",
                        "Tolerance: |out - ref| <= rtol*|ref| + atol*rms(ref) with rtol 0.0001, atol 0.0001"});
  // The task's own seeds come before the extra distributions, at most four sets in detail.
  EXPECT_LT(text.find("- seed0"), text.find("- scaled_down"));
  EXPECT_NE(text.find("- and "), std::string::npos);
}

TEST(Feedback, WrongOutputSaysHowManyElementsAreBadAndWhere) {
  // A row-wise kernel whose column block stops at 192 of 256: the tail of every row is unwritten.
  std::string text = FeedbackFromJson(LoadEvaluation("cpu_wrong_output_tail_relu"));
  ExpectContains(text, {"1024 of 4096 elements are beyond the tolerance (25%)", "rows: every row",
                        "columns: every column from 192 on (the tail), and no other"});
}

TEST(Feedback, BaselineSummaryGivesTheTimesToBeat) {
  std::string text = BaselineSummary(LoadEvaluation("gpu_accepted_softmax"));
  ExpectContains(text, {"- PyTorch eager: ", "- kforge's built-in compiler (the starting point): ", "measurably faster"});
  EXPECT_EQ(BaselineSummary(LoadEvaluation("cpu_accepted_relu")), "");  // timings on the CPU mean nothing
  EXPECT_EQ(BaselineSummary(LoadEvaluation("cpu_wrong_output_relu")), "");
}

TEST(Feedback, RejectedHackSaysWhichCheckAndWhy) {
  std::string memo = FeedbackFromJson(LoadEvaluation("cpu_memoization_relu"));
  ExpectContains(memo, {"Verdict: rejected_hack(memoization)", "results are cached",
                        "Why this is not allowed: " + WhyNotAllowed("memoization")});
  std::string threads = FeedbackFromJson(LoadEvaluation("cpu_threads_relu"));
  ExpectContains(threads, {"Verdict: rejected_hack(threads)", "line 7: `import threading`", "Why this is not allowed: "});
}

TEST(Feedback, LibraryComputeListsTheLibraryKernels) {
  std::string text = FeedbackFromJson(LoadEvaluation("gpu_library_compute_cross_entropy"));
  ExpectContains(text, {"Verdict: rejected_hack(library_compute)", "every FLOP of the forward pass must run in kernels you",
                        "Library kernels on the hot path:\n- void at::native::_scatter_gather_elementwise_kernel"});
  // The verdict's own list of kernels is cut short; the list below names each one once.
  EXPECT_LT(text.size(), 2000u) << text;
}

TEST(Feedback, TimeoutSaysHowFarItGot) {
  std::string text = FeedbackFromJson(LoadEvaluation("cpu_timeout_relu"));
  ExpectContains(text, {"Verdict: timeout", "ran past the 8 s limit", "Likely causes: a loop in a kernel that never ends",
                        "Triton's interpreter"});
}

TEST(Feedback, CrashSaysWhatHappened) {
  std::string text = FeedbackFromJson(LoadEvaluation("cpu_crashed_segfault_relu"));
  ExpectContains(text, {"Verdict: crashed", "killed by SIGSEGV", "a missing mask on the last block"});
}

TEST(Feedback, AcceptedOnTheGpuComparesTimes) {
  std::string softmax = FeedbackFromJson(LoadEvaluation("gpu_accepted_softmax"));
  ExpectContains(softmax, {"Verdict: accepted\ncorrect on 8 input sets; 2.07x vs eager",
                           "for the PyTorch reference (eager): 2.07x.", "Share of GPU time in your own kernels: 100%.",
                           "Roofline: the floor is", "Kernels on the hot path:\n- "});
  std::string relu = FeedbackFromJson(LoadEvaluation("gpu_accepted_relu"));
  ExpectContains(relu, {"1.00x, no significant speedup", "Against torch.compile of the reference",
                        "1.00x, slower than torch.compile."});
}

// The counters are ncu_counters_h200.json: kernel_profile.py's summary of a real ncu report from
// the H200 (a Triton element-wise kernel and cuBLAS's SGEMM), set into a real evaluation.
TEST(Feedback, KernelCountersSayWhatBoundsEachKernel) {
  Json evaluation = LoadEvaluation("gpu_accepted_softmax");
  std::string without = FeedbackFromJson(evaluation);
  EXPECT_EQ(without.find("What bounds the kernels"), std::string::npos);
  EXPECT_EQ(without.find("Bound by the host"), std::string::npos);  // its kernels fill the call
  evaluation["evidence"]["kernel_counters"] = LoadEvaluation("ncu_counters_h200");
  std::string text = FeedbackFromJson(evaluation);
  ExpectContains(text, {"What bounds the kernels (Nsight Compute",
                        "- scale_kernel (yours), 30.8 us: memory-bound. DRAM throughput 74% of peak, SM throughput 7% of peak",
                        "long_scoreboard (", "Next: move fewer bytes",
                        "(library_compute), 342.6 us: compute-bound", "0.97 of one wave"});
  EXPECT_LT(text.find("scale_kernel"), text.find("cutlass"));

  evaluation["evidence"]["kernel_counters"] = Json{{"skipped", "Nsight Compute (ncu) is not installed here"}};
  ExpectContains(FeedbackFromJson(evaluation), {"Hardware counters were not read: Nsight Compute (ncu) is not installed here"});
}

TEST(Feedback, ACallMostlyOutsideKernelsIsBoundByTheHost) {
  Json evaluation = LoadEvaluation("gpu_accepted_softmax");
  evaluation["candidate_ms"]["median"] = 0.5;  // the same 65 us of kernels in a 500 us call
  ExpectContains(FeedbackFromJson(evaluation), {"Bound by the host: a call takes 500.0 us but its 1 kernel launch(es) run 65.5 us"});
}

TEST(Feedback, AcceptedOnTheCpuSaysTimingsMeanNothing) {
  std::string text = FeedbackFromJson(LoadEvaluation("cpu_accepted_relu"));
  ExpectContains(text, {"Verdict: accepted", "Timings here mean nothing"});
  EXPECT_EQ(text.find("Time:"), std::string::npos);
}

TEST(Feedback, IsDeterministicAndMatchesTheStructPath) {
  Evaluation evaluation = MakeEvaluation(VerdictKind::kAccepted, "correct on 8 input sets", 1.5);
  EXPECT_EQ(FeedbackFor(evaluation), FeedbackFromJson(evaluation.ToJson()));
  EXPECT_EQ(FeedbackFor(evaluation), FeedbackFor(evaluation));
  EXPECT_NE(FeedbackFor(evaluation).find("1.50x."), std::string::npos) << FeedbackFor(evaluation);
}

TEST(Feedback, InfraErrorIsNotTheCandidatesFault) {
  std::string text = FeedbackFor(MakeEvaluation(VerdictKind::kInfraError, "trusted worker died"));
  ExpectContains(text, {"Verdict: infra_error", "not of your program"});
}

TEST(CandidateTraceback, KeepsOwnFramesAndExceptionLinesWithinTheLimit) {
  const std::string traceback =
      "Traceback (most recent call last):\n"
      "  File \"/x/harness.py\", line 96, in run_phase\n"
      "    return action()\n"
      "  File \"/x/torch/module.py\", line 10, in call\n"
      "    return forward(*args)\n"
      "  File \"candidate.py\", line 5, in forward\n"
      "    y = x.view(3)\n"
      "        ^^^^^^\n"
      "RuntimeError: bad view\n";
  EXPECT_EQ(CandidateTraceback(traceback),
            "Traceback (most recent call last):\n  ...\n  File \"candidate.py\", line 5, in forward\n    y = x.view(3)\n"
            "        ^^^^^^\nRuntimeError: bad view\n");
  EXPECT_EQ(CandidateTraceback(traceback, 2), "        ^^^^^^\nRuntimeError: bad view\n");
}

TEST(TailOf, CutsLinesAndCharactersWithAMarker) {
  EXPECT_EQ(TailOf("a\nb\nc\n", 5, 100), "a\nb\nc\n");
  EXPECT_EQ(TailOf("a\nb\nc\n", 2, 100), "[...]\nb\nc\n");
  EXPECT_EQ(TailOf("abcdef\n", 5, 3), "[...]\nef\n");
}

TEST(WhyNotAllowed, KnowsTheEvaluatorsChecks) {
  for (const char* check : {"memoization", "library_compute", "side_stream", "timer_tamper", "timer", "threads",
                            "file_io", "roofline", "input_mutation", "output_aliasing", "global_state", "monkeypatch",
                            "reference_model", "fallback_handler", "timed_output_mismatch", "nondeterministic"}) {
    EXPECT_NE(WhyNotAllowed(check), WhyNotAllowed("no_such_check")) << check;
  }
}

}  // namespace
}  // namespace kforge
