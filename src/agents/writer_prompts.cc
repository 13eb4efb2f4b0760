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
                      {"reply_problem", Trimmed(context.reply_problem)},
                      {"to_beat", Trimmed(brief.to_beat)},
                      {"others_failures", Trimmed(context.others_failures)}};
}

std::string BestSummary(const AcceptedCandidate& best) {
  return fmt::format("writer {}, round {}", best.writer, best.round);
}

// `<role>_candidate`, `<role>_origin` and `<role>_feedback`: an accepted program, who wrote it and
// how it was measured.
void AddCandidate(PromptValues& values, const std::string& role, const AcceptedCandidate& candidate) {
  values[role + "_candidate"] = Trimmed(candidate.source);
  values[role + "_origin"] = BestSummary(candidate);
  values[role + "_feedback"] = Trimmed(FeedbackFor(candidate.evaluation));
}

}  // namespace

std::string TargetDescription(const std::string& device, const std::string& gpu_name) {
  if (device == "cpu") return "the CPU, through Triton's interpreter (TRITON_INTERPRET=1)";
  if (!gpu_name.empty()) return "the " + gpu_name + " GPU (" + device + ")";
  return "a CUDA GPU (" + device + ")";
}

TargetMachine TargetMachine::FromFingerprint(const std::string& device, const Json& fingerprint) {
  TargetMachine machine;
  machine.device = device;
  auto text = [&](const char* key) {
    const Json& value = JsonField(fingerprint, key);
    return value.is_string() ? value.get<std::string>() : std::string();
  };
  machine.gpu = text("gpu");
  machine.compute_capability = text("compute_capability");
  machine.cuda = text("cuda");
  machine.driver = text("driver");
  machine.torch = text("torch");
  machine.triton = text("triton");
  machine.python = text("python");
  machine.sm_count = JsonGet<int>(fingerprint, "sm_count", 0);
  machine.memory_bytes = JsonGet<int64_t>(fingerprint, "memory_bytes", 0);
  machine.l2_bytes = JsonGet<int64_t>(fingerprint, "l2_bytes", 0);
  machine.shared_memory_per_block = JsonGet<int64_t>(fingerprint, "shared_memory_per_block_optin", 0);
  machine.shared_memory_per_sm = JsonGet<int64_t>(fingerprint, "shared_memory_per_sm", 0);
  machine.registers_per_sm = JsonGet<int>(fingerprint, "registers_per_sm", 0);
  return machine;
}

std::string TargetDescription(const TargetMachine& machine) {
  std::vector<std::string> hardware;
  if (!machine.compute_capability.empty()) hardware.push_back("compute capability " + machine.compute_capability);
  if (machine.sm_count > 0) hardware.push_back(fmt::format("{} SMs", machine.sm_count));
  if (machine.memory_bytes > 0) hardware.push_back(fmt::format("{:.1f} GiB of memory", machine.memory_bytes / double(1 << 30)));
  if (machine.l2_bytes > 0) hardware.push_back(fmt::format("{} MiB of L2 cache", machine.l2_bytes >> 20));
  if (machine.shared_memory_per_block > 0) {
    std::string shared = fmt::format("up to {} KiB of shared memory per block", machine.shared_memory_per_block >> 10);
    if (machine.shared_memory_per_sm > 0) shared += fmt::format(" ({} KiB per SM)", machine.shared_memory_per_sm >> 10);
    hardware.push_back(shared);
  }
  if (machine.registers_per_sm > 0) hardware.push_back(fmt::format("{} registers per SM", machine.registers_per_sm));
  std::vector<std::string> software;
  if (!machine.cuda.empty()) software.push_back("CUDA " + machine.cuda);
  if (!machine.torch.empty()) software.push_back("torch " + machine.torch);
  if (!machine.triton.empty()) software.push_back("Triton " + machine.triton);
  if (!machine.python.empty()) software.push_back("Python " + machine.python);
  std::string out = TargetDescription(machine.device, machine.gpu);
  if (!hardware.empty()) out += fmt::format(": {}", fmt::join(hardware, ", "));
  if (!software.empty()) out += fmt::format("{}{}", hardware.empty() ? ", with " : "; ", fmt::join(software, ", "));
  return out;
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
      AddCandidate(values, "best", *context.best);
      return prompts.Render("speedup", values);
    case PromptKind::kRecombine:
      if (!context.best || !context.mate) return Status::Internal("a recombine prompt needs two accepted candidates");
      AddCandidate(values, "best", *context.best);
      AddCandidate(values, "mate", *context.mate);
      return prompts.Render("recombine", values);
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
