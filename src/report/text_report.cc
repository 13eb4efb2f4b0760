#include "report/text_report.h"

#include <fmt/format.h>

#include <sstream>

namespace kforge {
namespace {

std::string Lines(const std::string& text, size_t keep) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > keep ? lines.size() - keep : 0; i < lines.size(); ++i) out += "    " + lines[i] + "\n";
  return out;
}

std::string Ms(const Json& summary) {
  return fmt::format("{:.4f} ms (95% CI {:.4f}-{:.4f}, n={})", JsonGet<double>(summary, "median", 0),
                     JsonGet<double>(summary, "ci_low", 0), JsonGet<double>(summary, "ci_high", 0),
                     JsonGet<int>(summary, "count", 0));
}

// The call at a second size: the leading dimension one longer.
void SecondSize(const Json& evidence, const Json& correctness, std::string& out) {
  const Json resized = JsonField(correctness, "resized");
  if (!resized.is_object()) return;
  const Json dims = JsonField(JsonField(JsonField(evidence, "reference"), "second_size"), "leading_dim");
  std::string size = dims.size() == 2 ? fmt::format("leading dim {} -> {}", dims[0].dump(), dims[1].dump()) : "";
  if (!JsonGet<bool>(resized, "checked", false)) {
    out += "  second size  not checked: " + JsonGet<std::string>(resized, "reason", "") + "\n";
  } else if (resized.contains("refused")) {
    out += "  second size  " + size + ": refused (" + JsonGet<std::string>(resized, "refused", "").substr(0, 120) + ")\n";
  } else {
    out += "  second size  " + size + (JsonGet<bool>(resized, "passed", false) ? ": pass\n" : ": FAIL\n");
  }
}

void Correctness(const Json& evidence, std::string& out) {
  const Json correctness = JsonField(evidence, "correctness");
  if (!correctness.is_object()) return;
  out += "correctness\n";
  for (const auto& [set, report] : JsonField(correctness, "sets").items()) {
    const Json outputs = JsonField(report, "outputs");
    double worst_ratio = 0, worst_abs = 0;
    for (const Json& output : outputs) {
      worst_ratio = std::max(worst_ratio, JsonGet<double>(output, "tolerance_ratio", 0));
      worst_abs = std::max(worst_abs, JsonGet<double>(output, "max_abs_error", 0));
    }
    out += fmt::format("  {:<12} {}  max abs error {:.3g}, {:.3g}x of tolerance\n", set,
                       JsonGet<bool>(report, "passed", false) ? "pass" : "FAIL", worst_abs, worst_ratio);
  }
  const Json buffers = JsonField(JsonField(evidence, "reference"), "mutated_buffers");
  if (!buffers.empty()) out += "  buffers      " + buffers.dump() + " compared after every checked call\n";
  SecondSize(evidence, correctness, out);
  const Json timed = JsonField(correctness, "timed");
  if (!timed.empty()) {
    out += fmt::format("  timed calls  {} of {} handed over checked at secret positions (and the profiled call)\n",
                       timed.size() - (JsonField(timed[timed.size() - 1], "call").is_string() ? 1 : 0),
                       JsonGet<int>(correctness, "timed_calls", 0));
  }
}

void Memory(const Json& evidence, std::string& out) {
  const Json memory = JsonField(evidence, "memory");
  if (!memory.is_object()) return;
  constexpr double kGiB = 1 << 30;
  out += fmt::format("memory       about {:.2f} GiB needed of {:.1f} GiB free (trusted worker {:.2f}, shared slots {:.2f}, "
                     "candidate {:.2f})\n", JsonGet<double>(memory, "needed_bytes", 0) / kGiB,
                     JsonGet<double>(memory, "free_bytes", 0) / kGiB, JsonGet<double>(memory, "trusted_bytes", 0) / kGiB,
                     JsonGet<double>(memory, "arena_bytes", 0) / kGiB, JsonGet<double>(memory, "candidate_bytes", 0) / kGiB);
}

void Timing(const Json& evidence, std::string& out) {
  const Json timing = JsonField(evidence, "timing");
  if (!timing.is_object()) return;
  bool meaningful = JsonGet<bool>(timing, "meaningful", false);
  out += fmt::format("timing ({}{})\n", JsonGet<std::string>(timing, "method", "?"),
                     meaningful ? ", fresh inputs per call, L2 flushed" : "");
  out += "  candidate  " + Ms(JsonField(timing, "candidate_ms")) + "\n";
  out += "  eager      " + Ms(JsonField(timing, "reference_eager_ms")) + "\n";
  const Json speedup = JsonField(timing, "speedup");
  out += fmt::format("  speedup    {:.3f}x (95% CI {:.3f}-{:.3f}){}\n", JsonGet<double>(speedup, "speedup", 0),
                     JsonGet<double>(speedup, "ci_low", 0), JsonGet<double>(speedup, "ci_high", 0),
                     JsonGet<bool>(speedup, "significant", false) ? "" : "  no significant speedup");
  const Json compiled = JsonField(timing, "reference_compile_ms");
  if (compiled.is_object()) {
    const Json versus = JsonField(timing, "speedup_vs_compile");
    out += "  compile    " + Ms(compiled) + "  (torch.compile of the reference)\n";
    out += fmt::format("  vs compile {:.3f}x (95% CI {:.3f}-{:.3f}){}\n", JsonGet<double>(versus, "speedup", 0),
                       JsonGet<double>(versus, "ci_low", 0), JsonGet<double>(versus, "ci_high", 0),
                       JsonGet<bool>(versus, "significant", false) ? "" : "  no significant difference");
  } else if (timing.contains("reference_compile_error")) {
    out += "  compile    torch.compile of the reference failed: " + JsonGet<std::string>(timing, "reference_compile_error", "") + "\n";
  }
  if (!meaningful) out += "  NOTE: measured on the CPU through Triton's interpreter; these timings mean nothing\n";
  const Json roofline = JsonField(evidence, "roofline");
  if (roofline.is_object()) {
    out += fmt::format("  roofline   floor {:.4f} ms; candidate at {:.1f}% of roofline\n",
                       JsonGet<double>(roofline, "floor_ms", 0), 100 * JsonGet<double>(roofline, "fraction_of_roofline", 0));
  }
}

void Provenance(const Json& evidence, std::string& out) {
  const Json provenance = JsonField(evidence, "provenance");
  if (!provenance.is_object()) return;
  bool meaningful = JsonGet<bool>(provenance, "times_meaningful", false);
  out += fmt::format("provenance   {:.1f}% of {} in authored kernels", 100 * JsonGet<double>(provenance, "authored_share", 0),
                     meaningful ? "GPU time" : "operations (CPU: counted, not timed)");
  const Json library = JsonField(provenance, "library_compute_names");
  out += library.empty() ? "; no library compute\n" : "; library compute: " + library.dump() + "\n";
}

void Failure(const Json& evidence, std::string& out) {
  const Json error = JsonField(evidence, "error");
  if (error.is_object() && !JsonGet<std::string>(error, "traceback", "").empty()) {
    out += "traceback (last lines)\n" + Lines(JsonGet<std::string>(error, "traceback", ""), 12);
  }
  const Json process = JsonField(evidence, "process");
  if (process.is_object() && !JsonGet<std::string>(process, "stderr_tail", "").empty()) {
    out += "candidate stderr (last lines)\n" + Lines(JsonGet<std::string>(process, "stderr_tail", ""), 8);
  }
}

}  // namespace

std::string FormatEvaluationJson(const Json& evaluation) {
  const Json evidence = JsonField(evaluation, "evidence");
  std::string out;
  const Json task = JsonField(evidence, "task");
  const Json candidate = JsonField(evidence, "candidate");
  out += fmt::format("task         {}\n", JsonGet<std::string>(task, "name", "?"));
  out += fmt::format("candidate    {} (sha256 {})\n", JsonGet<std::string>(candidate, "path", "?"),
                     JsonGet<std::string>(candidate, "hash", "").substr(0, 12));
  const Json options = JsonField(evidence, "options");
  out += fmt::format("device       {}, precision {}, mode {}\n", JsonGet<std::string>(evaluation, "device", "?"),
                     JsonGet<std::string>(options, "precision", "?"), JsonGet<std::string>(options, "mode", "?"));
  out += fmt::format("verdict      {}\n", JsonGet<std::string>(evaluation, "verdict", "?"));
  out += fmt::format("             {}\n", JsonGet<std::string>(evaluation, "message", ""));
  Correctness(evidence, out);
  Memory(evidence, out);
  Timing(evidence, out);
  Provenance(evidence, out);
  if (JsonGet<std::string>(evaluation, "verdict_kind", "") != "accepted") Failure(evidence, out);
  const Json sandbox = JsonField(JsonField(evidence, "process"), "sandbox");
  if (sandbox.is_object()) {
    out += fmt::format("sandbox      user: {}; network: {}\n", JsonGet<std::string>(sandbox, "user", "?"),
                       JsonGet<std::string>(sandbox, "network", "?"));
  }
  out += fmt::format("took         {:.2f} s\n", JsonGet<double>(evaluation, "duration_s", 0));
  return out;
}

std::string FormatEvaluation(const Evaluation& evaluation) { return FormatEvaluationJson(evaluation.ToJson()); }

std::string FormatBaseline(const Json& baseline) {
  std::string out = fmt::format("task {} on {} ({})\n", JsonGet<std::string>(baseline, "task", "?"),
                                JsonGet<std::string>(baseline, "device", "?"), JsonGet<std::string>(baseline, "precision", "?"));
  double eager = 0;
  bool kept = false;
  const Json& modes = JsonField(baseline, "modes");
  for (const char* mode : {"eager", "compile", "compile_max_autotune"}) {
    const Json& entry = JsonField(modes, mode);
    if (entry.is_null()) continue;
    if (entry.contains("error")) {
      out += fmt::format("  {:<22} failed: {}\n", mode, JsonGet<std::string>(entry, "error", ""));
      continue;
    }
    double median = JsonGet<double>(JsonField(entry, "ms"), "median", 0);
    if (std::string(mode) == "eager") eager = median;
    kept = kept || JsonGet<bool>(entry, "kept", false);
    out += fmt::format("  {:<22} {}", mode, Ms(JsonField(entry, "ms")));
    if (std::string(mode) != "eager" && median > 0 && eager > 0) out += fmt::format("  {:.2f}x vs eager", eager / median);
    if (const double compile_s = JsonGet<double>(entry, "compile_s", 0); compile_s > 0) {
      const Json& cache = JsonField(entry, "compile_cache");
      const int64_t hits = JsonGet<int64_t>(cache, "hits", 0), graphs = hits + JsonGet<int64_t>(cache, "misses", 0);
      out += fmt::format("  (compiled in {:.1f} s", compile_s);
      out += graphs > 0 ? fmt::format(", {} of {} graph(s) from the compile cache)", hits, graphs) : ")";
    }
    if (JsonGet<bool>(entry, "from_store", false)) out += fmt::format("  (stored {})", JsonGet<std::string>(entry, "recorded_at", "earlier"));
    out += "\n";
  }
  if (kept) out += "  kept in the workspace's store: evaluations of this task on this machine reuse them\n";
  if (JsonGet<std::string>(baseline, "device", "") == "cpu") out += "  NOTE: CPU timings; they say nothing about a GPU\n";
  return out;
}

}  // namespace kforge
