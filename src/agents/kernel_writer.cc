#include "agents/kernel_writer.h"

#include <fmt/format.h>

#include <exception>

#include "agents/code_extraction.h"
#include "agents/feedback.h"
#include "core/files.h"
#include "core/json.h"
#include "llm/cassette.h"

namespace kforge {
namespace {

std::string ReplyText(const Completion& completion) {
  if (completion.ok() || completion.outcome == CallOutcome::kTruncatedReply) return completion.text;
  return fmt::format("No reply: {}: {}\n", ToString(completion.outcome), completion.error);
}

std::string EmptyReplyProblem() {
  return "Your reply was empty, so there was no program to evaluate. Reply with the complete program in one fenced "
         "block that starts with ```python and ends with ```, defining `class ModelNew(nn.Module)`.";
}

std::string TruncatedReplyProblem(int max_tokens) {
  std::string limit = max_tokens > 0 ? fmt::format("the limit of {} tokens", max_tokens) : "the output token limit";
  return fmt::format("Your reply was cut off at {} before the program was complete. Keep it "
                     "shorter: put the program first, in one ```python block, with no explanation outside it and no "
                     "unused kernels or commented-out variants.", limit);
}

// A reply worth keeping for a resumed run: the model answered (whatever it answered).
bool PaidFor(const Completion& completion) {
  return completion.ok() || completion.outcome == CallOutcome::kTruncatedReply ||
         completion.outcome == CallOutcome::kEmptyReply;
}

// The reply recorded in a round's folder by an earlier, interrupted run of the same writer, so
// that resuming it pays for no call twice; nullopt when there is none or it cannot be read.
std::optional<Completion> RecordedReply(const std::filesystem::path& folder) {
  auto text = ReadFile(folder / "completion.json");
  if (!text.ok()) return std::nullopt;
  auto json = ParseJson(*text, "completion.json");
  if (!json.ok()) return std::nullopt;
  auto completion = ReplyFromJson(*json);
  if (!completion.ok() || !PaidFor(*completion)) return std::nullopt;
  return *completion;
}

}  // namespace

KernelWriter::KernelWriter(WriterSettings settings, const WriterBrief& brief, const PromptLibrary& prompts,
                           Provider& provider, CandidateJudge& judge, WriterBudget& budget,
                           std::filesystem::path run_dir, AttemptObserver on_attempt, const Clock& clock)
    : settings_(std::move(settings)), brief_(brief), prompts_(prompts), provider_(provider), judge_(judge),
      budget_(budget), run_dir_(std::move(run_dir)), on_attempt_(std::move(on_attempt)), clock_(clock) {}

WriterResult KernelWriter::Run() {
  WriterResult result;
  try {
    for (int round = 1; round <= settings_.max_rounds; ++round) {
      if (!budget_.TryStartAttempt()) {
        result.stop_reason = budget_.stop_reason();
        break;
      }
      Result<AttemptRecord> attempt = RunRound(round);
      if (!attempt.ok()) fatal_ = attempt.status();
      if (attempt.ok()) {
        result.attempts.push_back(*attempt);
        if (on_attempt_) on_attempt_(result.attempts.back());
      }
      if (!fatal_.ok()) {
        result.stop_reason = fatal_.ToString();
        break;
      }
      if (std::optional<std::string> reason = StopAfter(*attempt)) {
        result.stop_reason = *reason;
        break;
      }
    }
  } catch (const std::exception& error) {
    fatal_ = Status::Internal(fmt::format("writer {} failed: {}", settings_.index, error.what()));
    result.stop_reason = fatal_.ToString();
  }
  // A broken task or template, or an unwritable run folder, stops every writer alike.
  if (!fatal_.ok()) budget_.Stop(fatal_.ToString());
  result.status = fatal_;
  result.best = memory_.best;
  return result;
}

Result<AttemptRecord> KernelWriter::RunRound(int round) {
  double started = clock_.NowSeconds();
  last_evaluation_.reset();
  ContinueFromBoard(round);
  RoundContext context = ContextFor(round);
  AttemptRecord record;
  record.writer = settings_.index;
  record.round = round;
  record.prompt = context.kind;
  record.folder = run_dir_ / fmt::format("writer{}", settings_.index) / fmt::format("round{}", round);
  std::error_code ec;
  std::filesystem::create_directories(record.folder, ec);
  if (ec) return Status::IoError("cannot create " + record.folder.string() + ": " + ec.message());

  ASSIGN_OR_RETURN(Completion completion, AskModel(context, record));
  if (std::optional<std::string> program = ProgramFrom(completion, record)) RETURN_IF_ERROR(JudgeProgram(*program, record));
  bool faster_asked = context.kind == PromptKind::kSpeedup || context.kind == PromptKind::kRecombine;
  if (faster_asked && !record.improved) ++memory_.rounds_without_gain;
  if (settings_.board) settings_.board->NoteFailure(record);
  record.seconds = clock_.NowSeconds() - started;
  RETURN_IF_ERROR(SaveOutcome(record));
  return record;
}

Result<Completion> KernelWriter::AskModel(const RoundContext& context, AttemptRecord& record) {
  ASSIGN_OR_RETURN(std::vector<Message> messages, RoundMessages(prompts_, brief_, context, settings_.variant));
  if (std::optional<Completion> recorded = RecordedReply(record.folder)) {
    // Resuming: this round's reply was paid for before the run was interrupted.
    record.reused_reply = true;
    record.call_outcome = recorded->outcome;
    record.prompt_tokens = recorded->prompt_tokens;
    record.completion_tokens = recorded->completion_tokens;
    return *recorded;
  }
  RETURN_IF_ERROR(Save(record, "prompt.md", RenderPrompt(messages)));
  Completion completion = provider_.Complete(Request(std::move(messages), record));
  record.call_outcome = completion.outcome;
  record.prompt_tokens = completion.prompt_tokens;
  record.completion_tokens = completion.completion_tokens;
  record.cost_usd = completion.cost_usd;
  record.llm_seconds = completion.latency_s;
  // Attempts that may have been billed without a usage report count too (an estimate, on the high side).
  budget_.Charge(completion.cost_usd + completion.estimated_cost_usd,
                 completion.prompt_tokens + completion.completion_tokens + completion.estimated_tokens);
  RETURN_IF_ERROR(Save(record, "reply.md", ReplyText(completion)));
  if (PaidFor(completion)) RETURN_IF_ERROR(Save(record, "completion.json", ReplyToJson(completion).dump(1) + "\n"));
  return completion;
}

Status KernelWriter::SaveOutcome(const AttemptRecord& record) const {
  std::string feedback = last_evaluation_ ? FeedbackFor(*last_evaluation_) : record.message;
  if (!feedback.empty() && feedback.back() != '\n') feedback += "\n";
  RETURN_IF_ERROR(Save(record, "feedback.md", feedback));
  Json verdict = {{"attempt", record.ToJson()}, {"evaluation", last_evaluation_ ? last_evaluation_->ToJson() : Json()}};
  return Save(record, "verdict.json", verdict.dump(2) + "\n");
}

void KernelWriter::ContinueFromBoard(int round) {
  memory_.parent.reset();
  memory_.mate.reset();
  if (!settings_.board) return;
  std::optional<AcceptedCandidate> start = settings_.board->StartFor(settings_.index, round);
  if (start && !(memory_.best && memory_.best->source == start->source)) {
    if (!memory_.best || IsBetter(*start, memory_.best, settings_.min_gain)) {
      memory_.best = std::move(start);
      memory_.previous_candidate.clear();
      memory_.previous_feedback.clear();
      memory_.reply_problem.clear();
    } else if (settings_.board->strategy() == Strategy::kEvolve) {
      memory_.parent = std::move(start);  // exploring: this round mutates the runner-up
    }
  }
  if (memory_.best) {
    memory_.mate = settings_.board->MateFor(settings_.index, round, memory_.parent ? *memory_.parent : *memory_.best);
  }
}

RoundContext KernelWriter::ContextFor(int round) const {
  RoundContext context;
  context.round = round;
  if (settings_.board) context.others_failures = settings_.board->FailuresSeenBy(settings_.index);
  context.previous_candidate = memory_.previous_candidate;
  context.previous_feedback = memory_.previous_feedback;
  context.reply_problem = memory_.reply_problem;
  context.best = memory_.parent ? &*memory_.parent : memory_.best ? &*memory_.best : nullptr;
  context.mate = memory_.mate ? &*memory_.mate : nullptr;
  if (memory_.best) context.kind = memory_.mate ? PromptKind::kRecombine : PromptKind::kSpeedup;
  else if (!memory_.previous_candidate.empty() || !memory_.reply_problem.empty()) context.kind = PromptKind::kRepair;
  else context.kind = PromptKind::kWrite;
  return context;
}

CompletionRequest KernelWriter::Request(std::vector<Message> messages, const AttemptRecord& record) const {
  CompletionRequest request;
  request.tag = {"writer", settings_.scope, record.writer, record.round, ToString(record.prompt)};
  request.model = settings_.model;
  request.messages = std::move(messages);
  request.temperature = settings_.temperature;
  request.max_tokens = settings_.max_tokens;
  request.timeout_s = settings_.call_timeout_s;
  return request;
}

std::optional<std::string> KernelWriter::ProgramFrom(const Completion& completion, AttemptRecord& record) {
  bool truncated = completion.outcome == CallOutcome::kTruncatedReply;
  if (completion.ok() || truncated) {
    // A reply cut off after its program still holds a complete block worth judging.
    Extraction extraction = ExtractCandidate(completion.text);
    if (extraction.ok()) return extraction.source;
    record.outcome = AttemptOutcome::kExtractionFailed;
    record.verdict = truncated ? ToString(CallOutcome::kTruncatedReply) : ToString(*extraction.failure);
    record.message = truncated ? TruncatedReplyProblem(completion.max_tokens > 0 ? completion.max_tokens : settings_.max_tokens)
                               : extraction.message;
    memory_.reply_problem = record.message;
    return std::nullopt;
  }
  record.outcome = AttemptOutcome::kCallFailed;
  record.verdict = ToString(completion.outcome);
  record.message = completion.error;
  // An empty reply is the model's to fix; a transport failure leaves the conversation as it was.
  if (completion.outcome == CallOutcome::kEmptyReply) {
    record.message = EmptyReplyProblem();
    memory_.reply_problem = record.message;
  }
  return std::nullopt;
}

Status KernelWriter::JudgeProgram(const std::string& program, AttemptRecord& record) {
  record.candidate = record.folder / "candidate.py";
  RETURN_IF_ERROR(Save(record, "candidate.py", program));
  double started = clock_.NowSeconds();
  Result<Evaluation> evaluation = judge_.Judge(brief_.task, record.candidate);
  record.judge_seconds = clock_.NowSeconds() - started;
  if (!evaluation.ok()) {
    record.outcome = AttemptOutcome::kJudgeFailed;
    record.verdict = "judge_failed";
    record.message = evaluation.status().ToString();
    fatal_ = evaluation.status().WithContext("judging " + record.candidate.string());
    return Status::Ok();
  }
  budget_.ChargeEvaluation(evaluation->duration_s);
  record.outcome = AttemptOutcome::kJudged;
  record.verdict_kind = evaluation->verdict.kind;
  record.verdict = evaluation->verdict.ToString();
  record.message = evaluation->verdict.message;
  if (evaluation->speedup && evaluation->timings_meaningful) record.speedup = evaluation->speedup->speedup;
  last_evaluation_ = *evaluation;
  Remember(program, *evaluation, record);
  return Status::Ok();
}

void KernelWriter::Remember(const std::string& program, const Evaluation& evaluation, AttemptRecord& record) {
  // kforge's own failure says nothing about the program: the next round asks again as before.
  if (evaluation.verdict.kind == VerdictKind::kInfraError) return;
  memory_.reply_problem.clear();
  if (evaluation.verdict.accepted()) {
    AcceptedCandidate candidate{record.candidate, program, evaluation, settings_.index, record.round};
    if (settings_.board) settings_.board->Offer(candidate);
    if (IsBetter(candidate, memory_.best, settings_.min_gain)) {
      memory_.best = std::move(candidate);
      memory_.rounds_without_gain = 0;
      memory_.previous_candidate.clear();
      memory_.previous_feedback.clear();
      record.improved = true;
      return;
    }
  }
  memory_.previous_candidate = program;
  memory_.previous_feedback = FeedbackFor(evaluation);
}

std::optional<std::string> KernelWriter::StopAfter(const AttemptRecord& record) {
  if (record.improved && last_evaluation_ && !last_evaluation_->timings_meaningful) {
    std::string reason = fmt::format("writer {} has an accepted candidate and timings on {} mean nothing: there is "
                                     "nothing to make faster", settings_.index, brief_.device);
    budget_.Stop(reason);
    return reason;
  }
  if (memory_.best && memory_.rounds_without_gain >= settings_.speedup_patience) {
    return fmt::format("accepted, and {} speedup rounds in a row brought no gain", memory_.rounds_without_gain);
  }
  if (record.outcome == AttemptOutcome::kCallFailed && IsFatal(record.call_outcome)) {
    std::string reason = "the model call failed: " + record.verdict + ": " + record.message;
    budget_.Stop(reason);
    return reason;
  }
  return std::nullopt;
}

Status KernelWriter::Save(const AttemptRecord& record, const std::string& name, const std::string& contents) const {
  return WriteFile(record.folder / name, contents);
}

}  // namespace kforge
