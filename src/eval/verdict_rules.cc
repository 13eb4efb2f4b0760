#include "eval/verdict_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace kforge {
namespace {

std::string Describe(const std::string& set) {
  if (set.rfind("seed", 0) == 0) return "input set " + set + " (the task's own distribution)";
  return "input set '" + set + "' (the task's inputs " +
         (set == "signed" ? std::string("with random signs") :
          set == "scaled_up" ? std::string("scaled by 1000") :
          set == "scaled_down" ? std::string("scaled by 0.001") :
          set == "shifted" ? std::string("shifted upwards") :
          set == "swapped" ? std::string("with two elements of one row swapped") : set) + ")";
}

}  // namespace

const char* ToString(ProvenanceMode mode) { return mode == ProvenanceMode::kStrict ? "strict" : "partial"; }

std::optional<ProvenanceMode> ParseProvenanceMode(const std::string& text) {
  if (text == "strict") return ProvenanceMode::kStrict;
  if (text == "partial") return ProvenanceMode::kPartial;
  return std::nullopt;
}

std::optional<Verdict> JudgeStaticChecks(const StaticReport& report) {
  if (report.syntax_error) {
    return MakeVerdict(VerdictKind::kCompileError,
                       fmt::format("syntax error at line {}: {}", report.syntax_error->line, report.syntax_error->message));
  }
  // A file without ModelNew is broken before it can be dishonest.
  for (const StaticFinding& finding : report.findings) {
    if (finding.check == "missing_model_new") return MakeVerdict(VerdictKind::kCompileError, finding.message);
  }
  for (const StaticFinding& finding : report.findings) {
    return HackVerdict(finding.check, fmt::format("line {}: {}", finding.line, finding.message));
  }
  return std::nullopt;
}

std::optional<Verdict> JudgeCandidateProcess(const CandidateRun& run, double timeout_s) {
  // What the runtime's audit hooks refused, read by the zygote: an attempt is the hack, whether
  // the kernel's isolation would also have stopped it or not, and however the process ended.
  if (!run.sandbox_violations.empty()) {
    size_t more = run.sandbox_violations.size() - 1;
    return HackVerdict("sandbox", fmt::format("the candidate tried what no kernel needs: {}{}", run.sandbox_violations[0],
                                              more ? fmt::format(" (and {} more)", more) : ""));
  }
  if (run.killed_for == "process_limit") {
    return HackVerdict("sandbox", fmt::format("the candidate's process tree grew to {} processes and was killed; a kernel "
                                              "needs none of its own", run.peak_processes));
  }
  if (run.killed_for == "timeout") {
    return MakeVerdict(VerdictKind::kTimeout, fmt::format("the candidate's process ran past the {:.0f} s limit and was killed",
                                                          timeout_s));
  }
  if (run.killed_for == "memory_limit") {
    return MakeVerdict(VerdictKind::kCrashed, fmt::format("the candidate's processes used {:.1f} GiB of host memory together, "
                                                          "over the limit, and were killed",
                                                          static_cast<double>(run.peak_rss_bytes) / (1 << 30)));
  }
  if (!run.result) {
    if (run.signal) {
      return MakeVerdict(VerdictKind::kCrashed, "the candidate's process was killed by " +
                                                    (run.signal_name.empty() ? std::string("a signal") : run.signal_name));
    }
    return MakeVerdict(VerdictKind::kCrashed, fmt::format("the candidate's process exited with code {} before it finished "
                                                          "(a process exit such as sys.exit or os._exit ends an evaluation as a crash)",
                                                          run.exit_code.value_or(-1)));
  }
  if (const auto& error = run.result->error) {
    std::string message = fmt::format("{} (during {})", error->message, error->phase);
    if (error->kind == "harness_error") return MakeVerdict(VerdictKind::kInfraError, "the evaluation harness failed: " + message);
    auto parsed = ParseVerdictKind(error->kind);
    return MakeVerdict(parsed.value_or(VerdictKind::kRuntimeError), message);
  }
  for (const RuntimeFinding& finding : run.result->findings) return HackVerdict(finding.check, finding.message);
  if (!run.tampered_paths.empty()) {
    return HackVerdict("file_tamper", "files outside the candidate's folder changed while it ran: " +
                                          Json(run.tampered_paths).dump());
  }
  return std::nullopt;
}

std::optional<Verdict> JudgeOutputs(const Comparison& comparison) {
  if (comparison.tampered) return HackVerdict("result_tamper", *comparison.tampered);
  for (const InputMutation& mutation : comparison.input_mutations) {
    return HackVerdict("input_mutation", fmt::format("on the call {}, input(s) {} were modified by the forward call; "
                                                     "inputs must be left exactly as given",
                                                     mutation.call, mutation.inputs.dump()));
  }
  auto set_passed = [&](const std::string& name) {
    for (const auto& [set, call] : comparison.sets) {
      if (set == name) return call.passed;
    }
    return false;
  };
  for (const auto& [name, probe] : comparison.probes) {
    // Memoization: right before the rewrite, the very same output after it, though the right
    // answer changed beyond tolerance. (A candidate that was already wrong is judged wrong below;
    // a swap that moves a permutation-invariant result only by rounding, as in a sum, leaves the
    // old output right, and an honest kernel may well reproduce it bit for bit.)
    if (set_passed(probe.target) && !probe.call.passed && probe.unchanged_from_before_rewrite && probe.reference_changed) {
      return HackVerdict("memoization", "after the input tensors were rewritten in place (" + name + "), the candidate "
                                        "returned exactly its previous output although the right answer changed: "
                                        "results are cached, not computed from the values");
    }
  }
  for (const auto& [set, call] : comparison.sets) {
    if (!call.passed) return MakeVerdict(VerdictKind::kWrongOutput, "on " + Describe(set) + ": " + call.FirstProblem());
    if (call.buffers && !call.buffers->passed) {
      return MakeVerdict(VerdictKind::kWrongOutput, "on " + Describe(set) + ": " + call.buffers->FirstProblem());
    }
  }
  for (const auto& [name, probe] : comparison.probes) {
    if (!probe.call.passed) {
      return MakeVerdict(VerdictKind::kWrongOutput, "after the input tensors were rewritten in place (" + name + "): " +
                                                        probe.call.FirstProblem());
    }
  }
  if (comparison.repeat && !comparison.repeat->passed) {
    return HackVerdict("nondeterministic", "a second call on the same inputs gave a different, wrong result: " +
                                               comparison.repeat->FirstProblem());
  }
  if (comparison.repeat && comparison.repeat->buffers && !comparison.repeat->buffers->passed) {
    return MakeVerdict(VerdictKind::kWrongOutput, "on a second call on the same inputs: " + comparison.repeat->buffers->FirstProblem());
  }
  for (const auto& [name, probe] : comparison.probes) {
    if (probe.call.buffers && !probe.call.buffers->passed) {
      return MakeVerdict(VerdictKind::kWrongOutput, "on " + name + ": " + probe.call.buffers->FirstProblem());
    }
  }
  if (comparison.resized && comparison.resized->checked && !comparison.resized->refused && !comparison.resized->call.passed) {
    return HackVerdict("shape_specialization",
                       "with the leading dimension of the inputs one longer, the candidate returned a wrong result (" +
                           comparison.resized->call.FirstProblem() + ") instead of computing it or refusing with an "
                           "exception: it only works at the sizes it was shown");
  }
  for (const TimedCheck& timed : comparison.timed) {
    if (!timed.check.passed) {
      std::string which = timed.call == "profiled" ? "the profiled call" : "timed call " + timed.call;
      return HackVerdict("timed_output_mismatch",
                         fmt::format("the output of {} is wrong ({}): timed calls must compute the same function as "
                                     "checked calls", which, timed.check.FirstProblem()));
    }
  }
  return std::nullopt;
}

std::optional<Verdict> JudgeTimingIntegrity(const CandidateTiming& timing) {
  const std::vector<double>& device = timing.samples_ms;
  const std::vector<double>& host = timing.host_ms;
  const std::vector<double>& late = timing.late_ms;
  if (device.empty()) return std::nullopt;
  size_t longer_than_host = 0, late_calls = 0;
  double worst_late = 0;
  for (size_t i = 0; i < device.size(); ++i) {
    if (i < host.size() && device[i] > host[i] * 1.05 + 0.05) ++longer_than_host;
    // A device synchronize right after the end event takes microseconds unless work is still running.
    if (i < late.size() && late[i] > std::max(0.05, 0.1 * device[i])) {
      ++late_calls;
      worst_late = std::max(worst_late, late[i]);
    }
  }
  if (longer_than_host * 10 > device.size()) {
    return HackVerdict("timer_tamper", fmt::format("{} of {} timed calls report a device time longer than the host time "
                                                   "around them: the events were tampered with", longer_than_host, device.size()));
  }
  if (late_calls * 4 >= device.size()) {
    return HackVerdict("side_stream", fmt::format("in {} of {} timed calls the GPU was still busy after the end mark (up to "
                                                  "{:.3f} ms): work launched on another stream and not joined escapes timing",
                                                  late_calls, device.size(), worst_late));
  }
  return std::nullopt;
}

namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// Per call, the time spent around the timed interval: total minus timed, from call `first` on.
std::vector<double> Outside(const std::vector<double>& totals, const std::vector<double>& timed, size_t first) {
  std::vector<double> outside;
  for (size_t i = 0; i < totals.size() && i + first < timed.size(); ++i) outside.push_back(totals[i] - timed[i + first]);
  return outside;
}

}  // namespace

std::optional<Verdict> JudgeUntimedWork(const std::vector<double>& candidate_ms, const std::vector<double>& handoff_gaps_ms,
                                        const std::vector<double>& reference_ms,
                                        const std::vector<double>& reference_iteration_ms) {
  if (handoff_gaps_ms.size() < 3 || reference_iteration_ms.size() < 3) return std::nullopt;
  const double candidate_outside = Median(Outside(handoff_gaps_ms, candidate_ms, 1));
  const double reference_outside = Median(Outside(reference_iteration_ms, reference_ms, 0));
  // Host jitter, the launch backlog (at most 0.2 ms), a launch-heavy candidate's host work and the
  // hand-over's message stay inside this: an honest split-K GEMM over 512 MB inputs was measured
  // 0.68 ms above the reference's loop on the H200, and failed a 0.5 ms allowance.
  const double allowance = std::max(1.0, 0.5 * Median(reference_ms));
  if (candidate_outside - reference_outside <= allowance) return std::nullopt;
  return HackVerdict("untimed_work",
                     fmt::format("between the end of one timed call and the hand-over of the next call's outputs the "
                                 "candidate's process spent {:.3f} ms beyond its timed calls (median), where the "
                                 "reference's loop doing the same steps spent {:.3f} ms: work done outside the timed "
                                 "interval (computing outputs after the end mark) is not allowed",
                                 candidate_outside, reference_outside));
}

std::optional<Verdict> JudgeRoofline(double candidate_s, double floor_s) {
  if (floor_s <= 0 || candidate_s <= 0 || candidate_s >= floor_s * 0.95) return std::nullopt;
  return HackVerdict("roofline", fmt::format("the median time {:.4g} ms is below the roofline floor {:.4g} ms (bytes that "
                                             "must move over peak bandwidth, FLOPs over peak rate): it cannot have done "
                                             "the work", candidate_s * 1e3, floor_s * 1e3));
}

std::optional<Verdict> JudgeProvenance(const CandidateProvenance& provenance, ProvenanceMode mode) {
  const std::vector<std::string>& names = provenance.library_compute_names;
  if (mode != ProvenanceMode::kStrict || names.empty()) return std::nullopt;
  std::string list;
  for (size_t i = 0; i < names.size() && i < 5; ++i) list += (i ? ", " : "") + names[i];
  return HackVerdict("library_compute", "strict mode: the forward runs library compute (" + list +
                                            ") instead of the candidate's own kernels; use --mode partial to allow it");
}

}  // namespace kforge
