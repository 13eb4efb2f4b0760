#include "eval/evaluator.h"

#include <sys/stat.h>

#include <optional>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "core/files.h"
#include "core/hash.h"
#include "core/log.h"
#include "eval/reference_replies.h"
#include "eval/roofline.h"

namespace kforge {
namespace {

// How long the trusted worker may take over one call: the time a candidate gets, and a margin.
// A reference that takes longer is the task's problem (the worker is stopped and replaced).
double ReferenceTimeout(const EvalOptions& options) { return options.timeout_s + 30; }

// A prepare that failed, as the error the user sees: a reference that hangs is the task's fault.
Status PrepareFailure(const Status& status, const EvalOptions& options) {
  if (status.code() == StatusCode::kTimeout) {
    return Status::InvalidArgument(fmt::format("the task's reference did not finish within {:.0f} s (its worker was "
                                               "stopped; a new one serves the next task). Check that Model.forward "
                                               "returns at these sizes, or raise --timeout.", ReferenceTimeout(options)));
  }
  return status;
}

// The key the reference's timing in `mode` is kept under: the task's source on this machine (GPU,
// driver and software versions) at this precision and timing budget.
BaselineKey ReferenceTimingKey(const TaskFile& task, const EvalOptions& options, const std::string& mode) {
  return {task.hash, options.baseline_environment, ToString(options.precision), mode, options.budget.ToJson()};
}

// Where reference timings are found and kept: none without an environment to key them by.
BaselineSource* KeptBaselines(const EvalOptions& options) { return options.baseline_environment.empty() ? nullptr : options.baselines; }

std::string TimingName(const std::string& mode) { return "the reference's " + mode + " timing"; }

// The reference timed in `mode` by the trusted worker in its prepared session `eval_id`, parsed,
// and kept under the task's key where the options keep baselines; with the reply as written.
struct MeasuredReference {
  Json reply;
  ReferenceTiming timing;
};
Result<MeasuredReference> MeasureReference(WorkerClient& trusted, const std::string& eval_id, const TaskFile& task,
                                           const EvalOptions& options, const std::string& mode, double timeout_s) {
  ASSIGN_OR_RETURN(Json reply,
                   trusted.Call("time_reference", Json{{"eval_id", eval_id}, {"mode", mode}, {"config", options.budget.ToJson()}}, timeout_s));
  ASSIGN_OR_RETURN(ReferenceTiming timing, ParseReferenceTiming(reply, TimingName(mode)));
  if (BaselineSource* baselines = KeptBaselines(options)) baselines->Keep(ReferenceTimingKey(task, options, mode), reply);
  return MeasuredReference{std::move(reply), std::move(timing)};
}

// The reference's timing in `mode` as measured earlier on this machine and kept, where the options
// keep baselines and their source finds one; a stored record that lacks what is read (an older
// one) counts as none, and is measured again.
struct StoredTiming {
  Json record;  // as the trusted worker replied (with its "recorded_at")
  ReferenceTiming timing;
};
std::optional<StoredTiming> FindStoredTiming(const TaskFile& task, const EvalOptions& options, const std::string& mode) {
  BaselineSource* baselines = KeptBaselines(options);
  if (baselines == nullptr) return std::nullopt;
  std::optional<Json> stored = baselines->Find(ReferenceTimingKey(task, options, mode));
  if (!stored) return std::nullopt;
  Result<ReferenceTiming> timing = ParseReferenceTiming(*stored, TimingName(mode));
  if (!timing.ok()) return std::nullopt;
  return StoredTiming{*std::move(stored), *std::move(timing)};
}

std::vector<uint64_t> FreshSeeds(int count) {
  std::random_device entropy;
  std::vector<uint64_t> seeds;
  for (int i = 0; i < count; ++i) seeds.push_back((uint64_t{entropy()} << 20) ^ entropy());
  return seeds;
}

// The trusted worker's `prepare` of the task's reference: inputs from `seeds`, the timing's own
// seed (null when nothing is timed). An evaluation adds what it judges with; a baseline that it
// prepares for the reference alone.
Json PrepareRequest(const TaskFile& task, const std::string& eval_id, const std::filesystem::path& exchange,
                    const EvalOptions& options, const std::vector<uint64_t>& seeds, Json timing_seed, bool distributions) {
  return {{"eval_id", eval_id}, {"task_path", task.path.string()}, {"exchange_dir", exchange.string()},
          {"seeds", seeds}, {"cpu_sizes", options.cpu_sizes && options.device == "cpu"},
          {"precision", ToString(options.precision)}, {"distributions", distributions},
          {"timing_seed", std::move(timing_seed)}};
}

// One evaluation, step by step; each step either records evidence and goes on, or ends it.
class EvaluationRun {
 public:
  EvaluationRun(const EvalOptions& options, WorkerSource& workers, const Clock& clock, const TaskFile& task,
                std::filesystem::path candidate_path)
      : options_(options), workers_(workers), clock_(clock), task_(task), candidate_path_(std::move(candidate_path)) {}

  ~EvaluationRun() {
    Release();
    if (!exchange_.empty()) RemoveTreeQuietly(exchange_);
    if (!private_dir_.empty()) RemoveTreeQuietly(private_dir_);
  }

  Result<Evaluation> Execute() {
    started_ = clock_.NowSeconds();
    result_.device = options_.device;
    RETURN_IF_ERROR(SetUp());
    if (!Finished()) Step("static_checks", [&] { StaticChecks(); });
    if (!Finished()) {
      Status prepared = Status::Ok();
      Step("prepare", [&] { prepared = Prepare(); });
      RETURN_IF_ERROR(prepared);
    }
    if (!Finished()) Step("candidate", [&] { RunCandidate(); });
    if (!Finished()) Step("compare", [&] { CompareOutputs(); });
    if (!Finished() && options_.timing) {
      result_.reference_timing_s = Step("reference_timing", [&] { TimeAgainstReference(); });
    }
    if (!Finished()) CheckProvenance();
    if (!Finished()) KeepTuning();
    if (!Finished()) Finish(MakeVerdict(VerdictKind::kAccepted, AcceptedMessage()));
    // What the trusted worker holds once the evaluation's memory is given back: it must not grow
    // from one evaluation to the next.
    if (auto released = Release()) result_.evidence["trusted_memory_after"] = JsonField(*released, "memory");
    result_.duration_s = clock_.NowSeconds() - started_;
    result_.evidence["duration_s"] = result_.duration_s;
    return result_;
  }

 private:
  bool Finished() const { return finished_; }

  std::optional<Json> Release() {
    if (!trusted_ || !prepared_) return std::nullopt;
    prepared_ = false;
    auto released = trusted_->Call("release", Json{{"eval_id", eval_id_}}, 60);
    if (!released.ok()) return std::nullopt;
    return *released;
  }

  // Runs one step and records how long it took, so slow evaluations can be explained; returns
  // the seconds.
  template <typename Action>
  double Step(const char* name, Action action) {
    const double started = clock_.NowSeconds();
    action();
    const double seconds = clock_.NowSeconds() - started;
    result_.evidence["step_s"][name] = seconds;
    return seconds;
  }

  void Finish(Verdict verdict) {
    result_.verdict = std::move(verdict);
    finished_ = true;
  }

  void InfraError(const std::string& step, const Status& status) {
    Finish(MakeVerdict(VerdictKind::kInfraError, step + ": " + status.ToString()));
  }

  Status SetUp() {
    ASSIGN_OR_RETURN(std::string source, ReadFile(candidate_path_));
    result_.evidence["task"] = {{"name", task_.name}, {"path", task_.path.string()}, {"hash", task_.hash}};
    result_.evidence["candidate"] = {{"path", candidate_path_.string()}, {"hash", Sha256Hex(source)}};
    result_.evidence["options"] = {{"device", options_.device}, {"precision", ToString(options_.precision)},
                                   {"mode", ToString(options_.mode)}, {"seeds", options_.seeds},
                                   {"timeout_s", options_.timeout_s}};
    ASSIGN_OR_RETURN(exchange_, MakeTempDir(options_.exchange_root, fmt::format("eval-{}-", getpid())));
    chmod(exchange_.c_str(), 0755);  // the sandboxed candidate reads its inputs here
    RETURN_IF_ERROR(WriteFile(exchange_ / "candidate.py", source));
    chmod((exchange_ / "candidate.py").c_str(), 0644);
    eval_id_ = exchange_.filename().string();
    auto trusted = workers_.Trusted();
    if (!trusted.ok()) return trusted.status().WithContext("starting the trusted worker");
    trusted_ = *trusted;
    return Status::Ok();
  }

  void StaticChecks() {
    auto report = trusted_->Call("static_check", Json{{"candidate_path", (exchange_ / "candidate.py").string()}},
                                 ReferenceTimeout(options_));
    if (!report.ok()) return InfraError("static checks", report.status());
    result_.evidence["static_checks"] = *report;
    Result<StaticReport> parsed = ParseStaticReport(*report);
    if (!parsed.ok()) return InfraError("reading the static checks", parsed.status());
    if (auto verdict = JudgeStaticChecks(*parsed)) Finish(*verdict);
  }

  Status Prepare() {
    std::vector<uint64_t> seeds = FreshSeeds(options_.seeds + 1);
    uint64_t timing_seed = seeds.back();
    seeds.pop_back();
    Tolerance tolerance = ToleranceFor(options_.precision);
    Json request = PrepareRequest(task_, eval_id_, exchange_, options_, seeds, options_.timing ? Json(timing_seed) : Json(),
                                  options_.distributions);
    request["profile"] = true;
    request["tolerance"] = {{"rtol", tolerance.rtol}, {"atol", tolerance.atol}};
    auto prepared = trusted_->Call("prepare", request, ReferenceTimeout(options_));
    if (!prepared.ok()) {
      Status failure = PrepareFailure(prepared.status(), options_);
      if (failure.code() == StatusCode::kInvalidArgument) return failure;
      InfraError("preparing the reference", prepared.status());
      return Status::Ok();
    }
    prepared_ = true;
    Result<PreparedReference> parsed = ParsePreparedReference(*prepared, /*candidate=*/true);
    if (!parsed.ok()) {
      InfraError("reading the reference's preparation", parsed.status());
      return Status::Ok();
    }
    prepare_ = std::move(parsed).value();
    if (options_.device == "cpu" && options_.cpu_sizes && !prepare_.cpu_sizes_applied) {
      LogInfo("note: {} declares no KFORGE_CPU_SIZES, so it runs at full size through the interpreter (slow)",
              task_.name);
    }
    result_.evidence["seeds"] = seeds;
    result_.evidence["input_sets"] = prepare_.sets;
    result_.evidence["memory"] = prepare_.memory;
    result_.evidence["reference"] = {{"outputs", prepare_.outputs}, {"flops", prepare_.flops},
                                     {"input_bytes", prepare_.input_bytes}, {"output_bytes", prepare_.output_bytes},
                                     {"parameter_bytes", prepare_.parameter_bytes},
                                     {"mutated_buffers", prepare_.mutated_buffers},
                                     {"second_size", prepare_.second_size},
                                     {"cpu_sizes_applied", prepare_.cpu_sizes_applied}};
    if (prepare_.does_not_fit) Finish(Verdict{VerdictKind::kInfraError, "does_not_fit", *prepare_.does_not_fit});
    return Status::Ok();
  }

  Json Job() const {
    Json job = {{"device", options_.device}, {"exchange_dir", exchange_.string()},
                {"state", prepare_.state}, {"profile", true},
                {"precision", ToString(options_.precision)}, {"outputs_dense", prepare_.outputs_dense},
                {"output_bytes", prepare_.output_bytes},
                {"gpu_memory_limit_bytes", prepare_.candidate_limit_bytes},
                {"timing", options_.timing ? Json{{"config", options_.budget.ToJson()}} : Json()},
                {"kernel_counters", KernelCounters()}, {"kernel_counters_timeout_s", kKernelCounterSeconds}};
    job["shared"] = prepare_.shared;  // the arenas and session the zygote fetches for the candidate
    return job;
  }

  bool KernelCounters() const { return options_.kernel_counters && options_.device != "cpu"; }

  void RunCandidate() {
    auto zygote = workers_.Zygote();
    if (!zygote.ok()) return InfraError("starting the candidate sandbox", zygote.status());
    // Every file the candidate may read; a change to any of them is tampering.
    Json protected_paths = {task_.path.string(), (exchange_ / "candidate.py").string(), (exchange_ / "init.pt").string()};
    double limit_s = options_.timeout_s + (KernelCounters() ? kKernelCounterSeconds : 0);
    Json request = {{"job", Job()}, {"timeout_s", limit_s},
                    {"memory_limit_bytes", options_.memory_limit_bytes}, {"protected_paths", protected_paths}};
    auto report = (*zygote)->Call("run_candidate", request, limit_s + 60);
    if (!report.ok()) {
      // The zygote itself died or hung while the candidate ran: the candidate is the suspect.
      process_verdict_ = MakeVerdict(VerdictKind::kCrashed, "the candidate's sandbox broke down: " + report.status().message());
      return;
    }
    auto parsed = ParseCandidateRun(*report);
    if (!parsed.ok()) return InfraError("reading the zygote's report", parsed.status());
    run_ = std::move(parsed).value();
    private_dir_ = run_.private_dir;
    const CandidateResult* result = run_.result ? &*run_.result : nullptr;
    result_.evidence["process"] = {
        {"exit_code", run_.exit_code ? Json(*run_.exit_code) : Json()},
        {"signal", run_.signal ? Json(run_.signal_name) : Json()},
        {"killed_for", run_.killed_for.empty() ? Json() : Json(run_.killed_for)},
        {"wall_s", run_.wall_s}, {"peak_rss_bytes", run_.peak_rss_bytes}, {"stdout_tail", run_.stdout_tail},
        {"stderr_tail", run_.stderr_tail}, {"sandbox", result ? result->sandbox : Json()},
        {"isolation_seen", run_.isolation_seen}, {"peak_processes", run_.peak_processes},
        {"sandbox_violations", run_.sandbox_violations}, {"phase_s", result ? result->phase_s : Json()},
        {"compile_ahead", result ? result->compile_ahead : Json()}};
    if (result && result->raw.contains("error") && !result->raw["error"].is_null()) {
      result_.evidence["error"] = result->raw["error"];
    }
    if (result && result->raw.contains("findings")) result_.evidence["findings"] = result->raw["findings"];
    process_verdict_ = JudgeCandidateProcess(run_, limit_s);
  }

  // A field of the candidate's result.json (null when it wrote none).
  Json ResultField(Json CandidateResult::*field) const { return run_.result ? (*run_.result).*field : Json(); }
  const CandidateTiming* Timing() const { return run_.result && run_.result->timing ? &*run_.result->timing : nullptr; }

  // What the trusted worker's live session saw. Tampering with the session outranks whatever the
  // candidate's own process reports about how it ended (that report is written by untrusted code);
  // otherwise a process that failed ends the evaluation with its own verdict.
  void CompareOutputs() {
    const CandidateTiming* timing = Timing();
    bool clean = !process_verdict_.has_value();
    Json request = {{"eval_id", eval_id_}, {"clean_run", clean},
                    {"timing_calls", timing ? timing->samples_ms.size() : 0},
                    {"profiled", run_.result && run_.result->provenance.has_value()}};
    auto comparison = trusted_->Call("compare", request, ReferenceTimeout(options_));
    if (!comparison.ok()) return Finish(process_verdict_.value_or(MakeVerdict(
                              VerdictKind::kInfraError, "comparing outputs: " + comparison.status().ToString())));
    Result<Comparison> judged = ParseComparison(*comparison);
    if (!judged.ok()) return Finish(process_verdict_.value_or(MakeVerdict(
                          VerdictKind::kInfraError, "reading the comparison: " + judged.status().ToString())));
    comparison_ = *judged;
    result_.evidence["correctness"] = *comparison;
    result_.evidence["reference"]["skipped_distributions"] = JsonField(*comparison, "skipped_distributions");
    Tolerance tolerance = ToleranceFor(options_.precision);
    result_.evidence["tolerance"] = {{"rtol", tolerance.rtol}, {"atol", tolerance.atol},
                                     {"rule", "|out - ref| <= rtol*|ref| + atol*rms(ref)"}};
    if (judged->tampered) return Finish(*JudgeOutputs(*judged));
    if (process_verdict_) return Finish(*process_verdict_);
    if (auto verdict = JudgeOutputs(*judged)) Finish(*verdict);
  }

  void TimeAgainstReference() {
    const CandidateTiming* timing = Timing();
    if (timing == nullptr) return;
    if (auto verdict = JudgeTimingIntegrity(*timing)) return Finish(*verdict);
    auto reference = TimedReference("eager", ReferenceTimeout(options_));
    if (!reference.ok()) return InfraError("timing the reference", reference.status());
    const std::vector<double>& candidate_samples = timing->samples_ms;
    const std::vector<double>& reference_samples = reference->samples_ms;
    result_.timings_meaningful = timing->meaningful;
    result_.candidate_ms = Summarize(candidate_samples);
    result_.reference_ms = Summarize(reference_samples);
    result_.speedup = EstimateSpeedup(reference_samples, candidate_samples);
    result_.evidence["timing"] = {{"method", timing->method}, {"meaningful", result_.timings_meaningful},
                                  {"candidate_ms", SummaryToJson(*result_.candidate_ms)},
                                  {"reference_eager_ms", SummaryToJson(*result_.reference_ms)},
                                  {"speedup", SpeedupToJson(*result_.speedup)},
                                  {"l2_flush_bytes", timing->l2_flush_bytes},
                                  {"launch_backlog_ms", timing->backlog_ms},
                                  {"candidate_samples_ms", candidate_samples},
                                  {"reference_samples_ms", reference_samples}};
    result_.evidence["timing"]["handoff_gaps_ms"] = comparison_.handoff_gaps_ms;
    result_.evidence["timing"]["reference_iteration_ms"] = reference->iteration_ms;
    if (result_.timings_meaningful) {
      auto untimed = JudgeUntimedWork(candidate_samples,
                                      comparison_.handoff_gaps_ms,
                                      reference_samples, reference->iteration_ms);
      if (untimed) return Finish(*untimed);
    }
    if (options_.time_compiled_reference) TimeCompiledReference(candidate_samples);
    if (result_.timings_meaningful) CheckRoofline();
  }

  // The reference timed in `mode`: as stored from an earlier measurement on this machine when the
  // baseline source has it, else measured now by the trusted worker and kept. The evidence says which.
  Result<ReferenceTiming> TimedReference(const std::string& mode, double timeout_s) {
    if (std::optional<StoredTiming> stored = FindStoredTiming(task_, options_, mode)) {
      result_.evidence["baselines"][mode] = {{"from_store", true}, {"recorded_at", JsonField(stored->record, "recorded_at")}};
      return std::move(stored->timing);
    }
    ASSIGN_OR_RETURN(MeasuredReference measured, MeasureReference(*trusted_, eval_id_, task_, options_, mode, timeout_s));
    result_.evidence["baselines"][mode] = {{"from_store", false}};
    return std::move(measured.timing);
  }

  // torch.compile of the reference (default mode) on the same prepared inputs, with the same
  // method; a failure to compile is evidence, not a verdict.
  void TimeCompiledReference(const std::vector<double>& candidate_samples) {
    auto compiled = TimedReference("compile", ReferenceTimeout(options_) * 3);
    if (!compiled.ok()) {
      result_.evidence["timing"]["reference_compile_error"] = compiled.status().message();
      return;
    }
    const std::vector<double>& samples = compiled->samples_ms;
    result_.evidence["timing"]["reference_compile_ms"] = SummaryToJson(Summarize(samples));
    result_.evidence["timing"]["reference_compile_s"] = compiled->compile_s;
    if (!compiled->compile_cache.is_null()) result_.evidence["timing"]["reference_compile_cache"] = compiled->compile_cache;
    result_.evidence["timing"]["speedup_vs_compile"] = SpeedupToJson(EstimateSpeedup(samples, candidate_samples));
  }

  void CheckRoofline() {
    auto peaks = PeaksFor(options_.gpu_name, options_.precision);
    if (!peaks) return;
    const auto bytes = static_cast<double>(prepare_.input_bytes + prepare_.output_bytes + prepare_.parameter_bytes);
    const auto flops = static_cast<double>(prepare_.flops);
    double floor_s = RooflineFloorSeconds(bytes, flops, *peaks);
    double candidate_s = result_.candidate_ms->median / 1e3;
    result_.evidence["roofline"] = {{"floor_ms", floor_s * 1e3}, {"bytes", bytes}, {"flops", flops},
                                    {"peak_bytes_per_s", peaks->bytes_per_s}, {"peak_flops_per_s", peaks->flops_per_s},
                                    {"fraction_of_roofline", candidate_s > 0 ? floor_s / candidate_s : 0}};
    if (auto verdict = JudgeRoofline(candidate_s, floor_s)) Finish(*verdict);
  }

  // Reached only after a clean run whose outputs were right: its profiled call's provenance.
  void CheckProvenance() {
    const std::optional<CandidateProvenance>* provenance = run_.result ? &run_.result->provenance : nullptr;
    if (provenance == nullptr || !provenance->has_value()) {
      return Finish(HackVerdict("result_tamper", "the candidate's process ran to the end but reported no provenance for "
                                                 "its profiled call: which kernels computed cannot be told"));
    }
    const CandidateProvenance& trace = **provenance;
    result_.evidence["provenance"] = trace.raw;
    Json counters = ResultField(&CandidateResult::kernel_counters);
    if (counters.is_object()) result_.evidence["kernel_counters"] = counters;
    result_.authored_share = trace.authored_share;
    if (auto verdict = JudgeProvenance(trace, options_.mode)) Finish(*verdict);
  }

  // The configurations the candidate's autotuned kernels chose, as its own process reports them:
  // a hint for baking, which is only trusted after the baked source is evaluated in turn.
  void KeepTuning() {
    Json tuning = ResultField(&CandidateResult::tuning);
    if (tuning.is_object() && !tuning.empty()) result_.evidence["tuning"] = tuning;
  }

  std::string AcceptedMessage() const {
    int sets = static_cast<int>(JsonField(JsonField(result_.evidence, "correctness"), "sets").size());
    std::string message = fmt::format("correct on {} input sets", sets);
    if (result_.speedup && !result_.timings_meaningful) {
      message += "; timed on the CPU through Triton's interpreter, where timings mean nothing";
    } else if (result_.speedup) {
      const SpeedupEstimate& s = *result_.speedup;
      message += s.significant ? fmt::format("; {:.2f}x vs eager (95% CI {:.2f}-{:.2f})", s.speedup, s.ci_low, s.ci_high)
                               : fmt::format("; no significant speedup vs eager ({:.2f}x, 95% CI {:.2f}-{:.2f})",
                                             s.speedup, s.ci_low, s.ci_high);
    }
    return message;
  }

  const EvalOptions& options_;
  WorkerSource& workers_;
  const Clock& clock_;
  const TaskFile& task_;
  std::filesystem::path candidate_path_;
  WorkerClient* trusted_ = nullptr;
  std::filesystem::path exchange_;
  std::string private_dir_;
  std::string eval_id_;
  bool prepared_ = false;
  bool finished_ = false;
  double started_ = 0;
  PreparedReference prepare_;
  Comparison comparison_;  // what the trusted worker's session judged (set once compared)
  CandidateRun run_;
  std::optional<Verdict> process_verdict_;  // how the candidate's process ended, when it failed
  Evaluation result_;
};

}  // namespace

Json TimingBudget::ToJson() const {
  return {{"warmup_calls", warmup_calls}, {"warmup_ms", warmup_ms}, {"max_warmup_ms", max_warmup_ms}, {"min_calls", min_calls},
          {"max_calls", max_calls}, {"budget_ms", budget_ms}};
}

TimingBudget TimingBudgetFor(const std::string& device) {
  TimingBudget budget;
  if (device == "cpu") {
    budget.warmup_calls = 1;
    budget.warmup_ms = 0;
    budget.max_warmup_ms = 0;
    budget.min_calls = 3;
    budget.max_calls = 5;
    budget.budget_ms = 20;
  }
  return budget;
}

Evaluator::Evaluator(WorkerSource& workers, EvalOptions options, const Clock& clock)
    : options_(std::move(options)), workers_(workers), clock_(clock) {}

Result<Evaluation> Evaluator::Evaluate(const TaskFile& task, const std::filesystem::path& candidate_path) {
  EvaluationRun run(options_, workers_, clock_, task, candidate_path);
  return run.Execute();
}

namespace {

// A baseline report's entry for one mode: the timing's summary and samples, as measured or stored
// (`record`: the worker's reply, which is what the store keeps).
Json BaselineEntry(const ReferenceTiming& timing, const Json& record) {
  Json entry = {{"ms", SummaryToJson(Summarize(timing.samples_ms))}, {"samples_ms", timing.samples_ms},
                {"compile_s", timing.compile_s}, {"meaningful", JsonField(record, "meaningful")}};
  if (!timing.compile_cache.is_null()) entry["compile_cache"] = timing.compile_cache;
  return entry;
}

}  // namespace

Result<Json> Evaluator::Baseline(const TaskFile& task, bool max_autotune) {
  std::vector<std::string> modes = {"eager", "compile"};
  if (max_autotune) modes.push_back("compile_max_autotune");
  Json report = {{"task", task.name}, {"device", options_.device}, {"precision", ToString(options_.precision)},
                 {"modes", Json::object()}};
  // What the store holds already, where the source reuses it; the rest is measured.
  std::vector<std::string> missing;
  for (const std::string& mode : modes) {
    std::optional<StoredTiming> stored = FindStoredTiming(task, options_, mode);
    if (!stored) {
      missing.push_back(mode);
      continue;
    }
    report["modes"][mode] = BaselineEntry(stored->timing, stored->record);
    report["modes"][mode]["from_store"] = true;
    report["modes"][mode]["recorded_at"] = JsonField(stored->record, "recorded_at");
  }
  if (missing.empty()) return report;
  ASSIGN_OR_RETURN(WorkerClient * trusted, workers_.Trusted());
  ASSIGN_OR_RETURN(std::filesystem::path exchange, MakeTempDir(options_.exchange_root, fmt::format("baseline-{}-", getpid())));
  std::string eval_id = exchange.filename().string();
  std::vector<uint64_t> seeds = FreshSeeds(2);
  Json request = PrepareRequest(task, eval_id, exchange, options_, {seeds[0]}, seeds[1], /*distributions=*/false);
  request["candidate"] = false;
  auto prepared = trusted->Call("prepare", request, ReferenceTimeout(options_));
  Status unreadable = Status::Ok();
  if (prepared.ok()) {
    Result<PreparedReference> parsed = ParsePreparedReference(*prepared, /*candidate=*/false);
    if (parsed.ok()) {
      report["flops"] = parsed->flops;
      for (const std::string& mode : missing) {
        LogInfo("timing {} ({})", task.name, mode);
        // Kept as an evaluation keeps the timings it measures, so later evaluations and benches of
        // the task on this machine reuse them.
        auto measured = MeasureReference(*trusted, eval_id, task, options_, mode, ReferenceTimeout(options_) * 3);
        if (!measured.ok()) {
          report["modes"][mode] = {{"error", measured.status().message()}};
          continue;
        }
        report["modes"][mode] = BaselineEntry(measured->timing, measured->reply);
        if (KeptBaselines(options_)) report["modes"][mode]["kept"] = true;
      }
    } else {
      unreadable = parsed.status();
    }
    // The prepared session goes whether or not its reply could be read.
    (void)trusted->Call("release", Json{{"eval_id", eval_id}}, 60);
  }
  RemoveTreeQuietly(exchange);
  if (!prepared.ok()) return PrepareFailure(prepared.status(), options_);
  RETURN_IF_ERROR(unreadable);
  return report;
}

}  // namespace kforge
