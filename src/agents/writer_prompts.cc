#include "agents/writer_prompts.h"

#include <fmt/format.h>

#include "agents/feedback.h"

namespace kforge {
namespace {

// Values sit inside templates that supply their own line breaks.
std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
  return text;
}

std::string Knowledge(const PromptLibrary& prompts) {
  std::string out;
  for (const std::string& name : prompts.NamesUnder("knowledge/")) {
    auto text = prompts.Raw(name);
    if (text.ok()) out += (out.empty() ? "" : "\n\n") + Trimmed(*text);
  }
  return out;
}

Result<std::string> Approach(const PromptLibrary& prompts, int variant) {
  std::vector<std::string> names = prompts.NamesUnder("approaches/");
  if (names.empty()) return std::string();
  size_t index = static_cast<size_t>(variant < 0 ? -variant : variant) % names.size();
  return prompts.Raw(names[index]);
}

// Values every round prompt shares.
Result<PromptValues> CommonValues(const PromptLibrary& prompts, const WriterBrief& brief, const RoundContext& context,
                                  int variant) {
  ASSIGN_OR_RETURN(std::string approach, Approach(prompts, variant));
  return PromptValues{{"task_name", brief.task.name},
                      {"task_source", Trimmed(brief.task.source)},
                      {"target", brief.target},
                      {"round", std::to_string(context.round)},
                      {"approach", Trimmed(approach)},
                      {"previous_candidate", Trimmed(context.previous_candidate)},
                      {"previous_feedback", Trimmed(context.previous_feedback)},
                      {"reply_problem", Trimmed(context.reply_problem)}};
}

std::string BestSummary(const AcceptedCandidate& best) {
  return fmt::format("writer {}, round {}", best.writer, best.round);
}

}  // namespace

std::string TargetDescription(const std::string& device, const std::string& gpu_name) {
  if (device == "cpu") return "the CPU, through Triton's interpreter (TRITON_INTERPRET=1)";
  if (!gpu_name.empty()) return "the " + gpu_name + " GPU (" + device + ")";
  return "a CUDA GPU (" + device + ")";
}

Result<std::string> SystemPrompt(const PromptLibrary& prompts, const WriterBrief& brief) {
  bool strict = brief.mode != "partial";
  return prompts.Render("system", {{"target", brief.target},
                                   {"precision", brief.precision},
                                   {"mode", brief.mode},
                                   {"strict", strict ? "yes" : ""},
                                   {"partial", strict ? "" : "yes"},
                                   {"interpreter", brief.device == "cpu" ? "yes" : ""},
                                   {"knowledge", Knowledge(prompts)}});
}

Result<std::string> RoundPrompt(const PromptLibrary& prompts, const WriterBrief& brief, const RoundContext& context,
                                int variant) {
  ASSIGN_OR_RETURN(PromptValues values, CommonValues(prompts, brief, context, variant));
  switch (context.kind) {
    case PromptKind::kWrite:
      values["ir_summary"] = Trimmed(brief.ir_summary);
      values["starting_candidate"] = Trimmed(brief.starting_candidate);
      return prompts.Render("write", values);
    case PromptKind::kRepair:
      return prompts.Render("repair", values);
    case PromptKind::kSpeedup:
      if (!context.best) return Status::Internal("a speedup prompt needs an accepted candidate");
      values["best_candidate"] = Trimmed(context.best->source);
      values["best_origin"] = BestSummary(*context.best);
      values["best_feedback"] = Trimmed(FeedbackFor(context.best->evaluation));
      return prompts.Render("speedup", values);
  }
  return Status::Internal("unknown prompt kind");
}

Result<std::vector<Message>> RoundMessages(const PromptLibrary& prompts, const WriterBrief& brief,
                                           const RoundContext& context, int variant) {
  ASSIGN_OR_RETURN(std::string system, SystemPrompt(prompts, brief));
  ASSIGN_OR_RETURN(std::string user, RoundPrompt(prompts, brief, context, variant));
  return std::vector<Message>{{Role::kSystem, std::move(system)}, {Role::kUser, std::move(user)}};
}

}  // namespace kforge
