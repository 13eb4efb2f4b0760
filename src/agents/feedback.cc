#include "agents/feedback.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "agents/check_explanations.h"

namespace kforge {
namespace {

constexpr size_t kMaxFailingSets = 4;
constexpr size_t kMaxLibraryNames = 5;
constexpr size_t kMaxNameChars = 120;
constexpr size_t kMaxMessageChars = 600;

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string Shorten(const std::string& text, size_t max_chars) {
  return text.size() <= max_chars ? text : text.substr(0, max_chars) + "...";
}

std::string ShapeText(const Json& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + shape[i].dump();
  return out + "]";
}

// "float32[16, 256]"
std::string TensorText(const Json& tensor) {
  return JsonGet<std::string>(tensor, "dtype", "?") + ShapeText(JsonField(tensor, "shape"));
}

std::string SetDescription(const std::string& name) {
  if (name.rfind("seed", 0) == 0) return "the task's own input distribution";
  if (name == "signed") return "the task's inputs with random signs";
  if (name == "scaled_up") return "the task's inputs scaled by 1000";
  if (name == "scaled_down") return "the task's inputs scaled by 0.001";
  if (name == "shifted") return "the task's inputs shifted upwards";
  if (name == "swapped") return "the task's inputs with two elements of one row swapped";
  if (name.rfind("probe_", 0) == 0) return "the inputs rewritten in place between two calls";
  return "an extra input distribution";
}

// Seeds first (the task's own distribution is what a fix must get right first), then the
// extra distributions, then the in-place probes; alphabetical within each.
int SetRank(const std::string& name) { return name.rfind("seed", 0) == 0 ? 0 : name.rfind("probe_", 0) == 0 ? 2 : 1; }

std::string InputsOf(const Json& evidence, const std::string& set) {
  for (const Json& input_set : JsonField(evidence, "input_sets")) {
    if (JsonGet<std::string>(input_set, "name", "") != set) continue;
    std::string out;
    for (const Json& input : JsonField(input_set, "inputs")) out += (out.empty() ? "" : ", ") + TensorText(input);
    return out;
  }
  return "";
}

std::string OutputLine(size_t index, const Json& output) {
  std::string line = fmt::format("output {} {}: ", index, TensorText(output));
  if (!output.contains("max_abs_error")) return line + JsonGet<std::string>(output, "problem", "differs");
  line += fmt::format("max abs error {:.4g}, max rel error {:.4g}, {:.3g}x the tolerance",
                      JsonGet<double>(output, "max_abs_error", 0), JsonGet<double>(output, "max_rel_error", 0),
                      JsonGet<double>(output, "tolerance_ratio", 0));
  line += fmt::format("; worst at {}: expected {:.7g}, got {:.7g}", ShapeText(JsonField(output, "worst_index")),
                      JsonGet<double>(output, "reference_value", 0), JsonGet<double>(output, "candidate_value", 0));
  int nonfinite = JsonGet<int>(output, "nonfinite_where_reference_finite", 0);
  if (nonfinite > 0) line += fmt::format("; {} inf/nan values where the reference is finite", nonfinite);
  // Where the bad elements are tells a tail bug (masked loads, the last block) from a wrong formula.
  const Json& pattern = JsonField(output, "pattern");
  if (pattern.is_object()) {
    int64_t bad = JsonGet<int64_t>(pattern, "bad_elements", 0);
    int64_t checked = JsonGet<int64_t>(pattern, "checked_elements", 0);
    line += fmt::format("\n      {} of {} elements{} are beyond the tolerance ({:.3g}%)", bad, checked,
                        output.contains("sampled_elements") ? " checked" : "",
                        checked > 0 ? 100.0 * static_cast<double>(bad) / static_cast<double>(checked) : 0.0);
    for (const char* lines : {"rows", "columns"}) {
      const Json& where = JsonField(pattern, lines);
      if (where.is_object()) line += fmt::format("; {}: {}", lines, JsonGet<std::string>(where, "words", ""));
    }
    if (pattern.contains("rows") || pattern.contains("columns")) line += " (rows: every dimension but the last)";
  }
  return line;
}

std::string FailingSet(const Json& evidence, const std::string& name, const Json& report) {
  std::string inputs = InputsOf(evidence, JsonGet<std::string>(report, "target", name));
  std::string out = fmt::format("- {} ({}{}{}):\n", name, SetDescription(name), inputs.empty() ? "" : "; inputs ", inputs);
  if (report.contains("problem")) out += "    " + JsonGet<std::string>(report, "problem", "") + "\n";
  const Json& outputs = JsonField(report, "outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!JsonGet<bool>(outputs[i], "passed", true)) out += "    " + OutputLine(i, outputs[i]) + "\n";
  }
  return out;
}

std::string WrongOutputDetails(const Json& evidence) {
  const Json& correctness = JsonField(evidence, "correctness");
  std::vector<std::pair<std::string, const Json*>> failing;
  std::vector<std::string> passing;
  for (const char* group : {"sets", "probes"}) {
    for (const auto& [name, report] : JsonField(correctness, group).items()) {
      if (JsonGet<bool>(report, "passed", false)) passing.push_back(name);
      else failing.emplace_back(name, &report);
    }
  }
  std::stable_sort(failing.begin(), failing.end(), [](const auto& a, const auto& b) { return SetRank(a.first) < SetRank(b.first); });
  std::string out = failing.empty() ? "" : "Failing input sets:\n";
  for (size_t i = 0; i < failing.size() && i < kMaxFailingSets; ++i) out += FailingSet(evidence, failing[i].first, *failing[i].second);
  if (failing.size() > kMaxFailingSets) out += fmt::format("- and {} more\n", failing.size() - kMaxFailingSets);
  std::string passed;
  for (const std::string& name : passing) passed += (passed.empty() ? "" : ", ") + name;
  if (!passed.empty()) out += "Passing input sets: " + passed + "\n";
  const Json& tolerance = JsonField(evidence, "tolerance");
  if (tolerance.is_object()) {
    out += fmt::format("Tolerance: {} with rtol {:g}, atol {:g}\n", JsonGet<std::string>(tolerance, "rule", ""),
                       JsonGet<double>(tolerance, "rtol", 0), JsonGet<double>(tolerance, "atol", 0));
  }
  return out;
}

std::string ErrorDetails(const Json& evidence) {
  const Json& error = JsonField(evidence, "error");
  std::string traceback = CandidateTraceback(JsonGet<std::string>(error, "traceback", ""));
  if (!traceback.empty()) return "Where it failed (frames outside your program left out):\n" + traceback;
  std::string stderr_tail = TailOf(JsonGet<std::string>(JsonField(evidence, "process"), "stderr_tail", ""), 20, 2000);
  return stderr_tail.empty() ? "" : "Last output of the process:\n" + stderr_tail;
}

std::string LibraryNames(const Json& evidence) {
  const Json& names = JsonField(JsonField(evidence, "provenance"), "library_compute_names");
  std::string out;
  for (size_t i = 0; i < names.size() && i < kMaxLibraryNames; ++i) {
    if (names[i].is_string()) out += "- " + Shorten(names[i].get<std::string>(), kMaxNameChars) + "\n";
  }
  return out.empty() ? "" : "Library kernels on the hot path:\n" + out;
}

std::string PhasesReached(const Json& evidence) {
  std::string phases;
  for (const auto& [phase, seconds] : JsonField(JsonField(evidence, "process"), "phase_s").items()) {
    phases += fmt::format("{}{} {:.1f} s", phases.empty() ? "" : ", ", phase, seconds.is_number() ? seconds.get<double>() : 0.0);
  }
  return phases.empty() ? "It did not finish loading.\n" : "Phases it finished: " + phases + ".\n";
}

std::string TimeoutDetails(const Json& evaluation, const Json& evidence) {
  std::string out = PhasesReached(evidence);
  out += "Likely causes: a loop in a kernel that never ends, a grid or loop far larger than the data, or autotuning "
         "over many configurations.";
  if (JsonGet<std::string>(evaluation, "device", "") == "cpu") {
    out += " Here kernels run in Triton's interpreter, where every program instance runs in Python: keep grids "
           "proportional to the data and avoid per-element Python loops.";
  }
  return out + "\n";
}

std::string CrashDetails(const Json& evidence) {
  std::string out;
  std::string stderr_tail = TailOf(JsonGet<std::string>(JsonField(evidence, "process"), "stderr_tail", ""), 20, 2000);
  if (!stderr_tail.empty()) out += "Last output of the process:\n" + stderr_tail;
  return out + "Likely causes: a load or store outside the tensors (a missing mask on the last block, wrong "
               "strides or offsets), or a huge allocation.\n";
}

std::string Ms(const Json& summary) {
  return fmt::format("{:.4g} ms (95% CI {:.4g}-{:.4g})", JsonGet<double>(summary, "median", 0),
                     JsonGet<double>(summary, "ci_low", 0), JsonGet<double>(summary, "ci_high", 0));
}

// "2.07x", "1.00x, no significant speedup", "0.80x, slower than <baseline>".
std::string SpeedupWords(const Json& speedup, const char* baseline) {
  double value = JsonGet<double>(speedup, "speedup", 0);
  if (!JsonGet<bool>(speedup, "significant", false)) return fmt::format("{:.2f}x, no significant speedup", value);
  return value < 1 ? fmt::format("{:.2f}x, slower than {}", value, baseline) : fmt::format("{:.2f}x", value);
}

std::string KernelTimes(const Json& provenance) {
  std::string out;
  size_t shown = 0;
  for (const Json& kernel : JsonField(provenance, "kernels")) {
    if (shown++ == 4) break;
    out += fmt::format("- {} ({}): {:.1f} us over {} call(s)\n", Shorten(JsonGet<std::string>(kernel, "name", "?"), kMaxNameChars),
                       JsonGet<std::string>(kernel, "class", "?"), JsonGet<double>(kernel, "time_us", 0),
                       JsonGet<int>(kernel, "calls", 0));
  }
  return out.empty() ? "" : "Kernels on the hot path:\n" + out;
}

// Where a call's time goes when the GPU is idle for most of it: launches and Python, not kernels.
std::string HostShare(const Json& evaluation, const Json& evidence) {
  const Json& provenance = JsonField(evidence, "provenance");
  if (!JsonGet<bool>(provenance, "times_meaningful", false)) return "";
  double kernel_us = 0;
  int launches = 0;
  for (const Json& kernel : JsonField(provenance, "kernels")) {
    kernel_us += JsonGet<double>(kernel, "time_us", 0);
    launches += JsonGet<int>(kernel, "calls", 0);
  }
  double call_us = 1000 * JsonGet<double>(JsonField(evaluation, "candidate_ms"), "median", 0);
  if (call_us <= 0 || kernel_us >= 0.5 * call_us) return "";
  return fmt::format("Bound by the host: a call takes {:.1f} us but its {} kernel launch(es) run {:.1f} us on the GPU; the "
                     "rest is launch and Python overhead. Fewer, larger kernels (fusion) or one CUDA graph replayed on the "
                     "current stream would remove it.\n",
                     call_us, launches, kernel_us);
}

const char* BoundAdvice(const std::string& bound) {
  if (bound == "memory") return "move fewer bytes: fuse with the neighbouring work, read each input once, wide coalesced accesses";
  if (bound == "compute") return "do less arithmetic per output: tensor cores where the precision policy allows, less index math";
  return "hide latency: more blocks or warps in flight, larger tiles with software pipelining (num_stages), fewer registers";
}

// What bounds each of the candidate's kernels, from Nsight Compute (kernel_profile.py).
std::string CounterLines(const Json& counters) {
  if (!counters.is_object()) return "";
  if (counters.contains("skipped")) {
    return "Hardware counters were not read: " + JsonGet<std::string>(counters, "skipped", "?") + "\n";
  }
  std::string out;
  size_t shown = 0;
  for (const Json& kernel : JsonField(counters, "kernels")) {
    if (shown++ == 4) break;
    std::string bound = JsonGet<std::string>(kernel, "bound", "?");
    std::string facts;
    for (const Json& fact : JsonField(kernel, "facts")) facts += (facts.empty() ? "" : "; ") + fact.get<std::string>();
    out += fmt::format("- {} ({}), {:.1f} us: {}-bound. {}. Next: {}.\n", Shorten(JsonGet<std::string>(kernel, "name", "?"), kMaxNameChars),
                       JsonGet<std::string>(kernel, "class", "?") == "authored" ? "yours" : JsonGet<std::string>(kernel, "class", "?"),
                       JsonGet<double>(kernel, "time_us", 0), bound, facts, BoundAdvice(bound));
  }
  return out.empty() ? "" : "What bounds the kernels (Nsight Compute, one forward at the GPU's own clocks):\n" + out;
}

std::string AcceptedDetails(const Json& evaluation, const Json& evidence) {
  if (!JsonGet<bool>(evaluation, "timings_meaningful", false) || !evaluation.contains("speedup")) {
    return "Timings here mean nothing (Triton's interpreter on the CPU, or timing was off): no speed comparison was "
           "made.\n";
  }
  std::string out = fmt::format("Time: {} against {} for the PyTorch reference (eager): {}.\n",
                                Ms(JsonField(evaluation, "candidate_ms")), Ms(JsonField(evaluation, "reference_ms")),
                                SpeedupWords(JsonField(evaluation, "speedup"), "the reference"));
  const Json& timing = JsonField(evidence, "timing");
  if (timing.contains("reference_compile_ms")) {
    out += fmt::format("Against torch.compile of the reference ({}): {}.\n", Ms(JsonField(timing, "reference_compile_ms")),
                       SpeedupWords(JsonField(timing, "speedup_vs_compile"), "torch.compile"));
  }
  if (evaluation.contains("authored_share")) {
    out += fmt::format("Share of GPU time in your own kernels: {:.0f}%.\n", 100 * JsonGet<double>(evaluation, "authored_share", 0));
  }
  const Json& roofline = JsonField(evidence, "roofline");
  if (roofline.is_object()) {
    out += fmt::format("Roofline: the floor is {:.4g} ms; this candidate runs at {:.0f}% of the roofline.\n",
                       JsonGet<double>(roofline, "floor_ms", 0), 100 * JsonGet<double>(roofline, "fraction_of_roofline", 0));
  }
  return out + KernelTimes(JsonField(evidence, "provenance")) + HostShare(evaluation, evidence) +
         CounterLines(JsonField(evidence, "kernel_counters"));
}

std::string Details(const std::string& kind, const Json& evaluation) {
  const Json& evidence = JsonField(evaluation, "evidence");
  if (kind == "compile_error" || kind == "runtime_error") return ErrorDetails(evidence);
  if (kind == "wrong_output") return WrongOutputDetails(evidence);
  if (kind == "rejected_hack") {
    return "Why this is not allowed: " + WhyNotAllowed(JsonGet<std::string>(evaluation, "check", "")) + "\n" +
           LibraryNames(evidence);
  }
  if (kind == "timeout") return TimeoutDetails(evaluation, evidence);
  if (kind == "crashed") return CrashDetails(evidence);
  if (kind == "accepted") return AcceptedDetails(evaluation, evidence);
  return "This is a failure of the evaluator itself, not of your program; send the same program again or an "
         "improved one.\n";
}

}  // namespace

std::string BaselineSummary(const Json& evaluation) {
  if (JsonGet<std::string>(evaluation, "verdict_kind", "") != "accepted" ||
      !JsonGet<bool>(evaluation, "timings_meaningful", false) || !evaluation.contains("candidate_ms")) {
    return "";
  }
  const Json& evidence = JsonField(evaluation, "evidence");
  const Json& timing = JsonField(evidence, "timing");
  std::string out = fmt::format("- PyTorch eager: {}\n", Ms(JsonField(evaluation, "reference_ms")));
  if (timing.contains("reference_compile_ms")) out += fmt::format("- torch.compile: {}\n", Ms(JsonField(timing, "reference_compile_ms")));
  out += fmt::format("- kforge's built-in compiler (the starting point): {}", Ms(JsonField(evaluation, "candidate_ms")));
  const Json& roofline = JsonField(evidence, "roofline");
  if (roofline.is_object()) {
    out += fmt::format(", {:.0f}% of the roofline (floor {:.4g} ms)", 100 * JsonGet<double>(roofline, "fraction_of_roofline", 0),
                       JsonGet<double>(roofline, "floor_ms", 0));
  }
  return out + "\nAn accepted candidate replaces the compiler's only when it is measurably faster.\n";
}

std::string FeedbackFor(const Evaluation& evaluation) { return FeedbackFromJson(evaluation.ToJson()); }

std::string FeedbackFromJson(const Json& evaluation) {
  std::string kind = JsonGet<std::string>(evaluation, "verdict_kind", "infra_error");
  std::string out = "Verdict: " + JsonGet<std::string>(evaluation, "verdict", kind) + "\n";
  std::string message = JsonGet<std::string>(evaluation, "message", "");
  if (!message.empty()) out += Shorten(message, kMaxMessageChars) + "\n";
  std::string details = Details(kind, evaluation);
  return details.empty() ? out : out + "\n" + details;
}

std::string CandidateTraceback(const std::string& traceback, size_t max_lines) {
  std::vector<std::string> kept;
  bool skipping = false;  // inside a frame of another file: its source lines go too
  for (const std::string& line : SplitLines(traceback)) {
    bool frame = line.rfind("  File \"", 0) == 0;
    if (frame) {
      skipping = line.find("candidate.py\"") == std::string::npos;
      if (skipping && (kept.empty() || kept.back() != "  ...")) kept.push_back("  ...");
      if (!skipping) kept.push_back(line);
    } else if (line.rfind("    ", 0) == 0) {
      if (!skipping) kept.push_back(line);
    } else {
      skipping = false;
      kept.push_back(line);
    }
  }
  std::string out;
  for (size_t i = kept.size() > max_lines ? kept.size() - max_lines : 0; i < kept.size(); ++i) out += kept[i] + "\n";
  return out;
}

std::string TailOf(const std::string& text, size_t max_lines, size_t max_chars) {
  std::vector<std::string> lines = SplitLines(text);
  size_t first = lines.size() > max_lines ? lines.size() - max_lines : 0;
  std::string out;
  for (size_t i = first; i < lines.size(); ++i) out += lines[i] + "\n";
  bool cut = first > 0 || out.size() > max_chars;
  if (out.size() > max_chars) out = out.substr(out.size() - max_chars);
  return cut ? "[...]\n" + out : out;
}

}  // namespace kforge
