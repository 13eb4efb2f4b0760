#include "agents/task_writer.h"

#include <cctype>

#include <fmt/format.h>

#include "agents/code_extraction.h"

namespace kforge {
namespace {

// What a program must define besides `class Model` to be a task.
std::string MissingPieces(const std::string& source) {
  std::string missing;
  for (const char* piece : {"def get_inputs", "def get_init_inputs"}) {
    if (source.find(piece) == std::string::npos) missing += fmt::format("{}`{}()`", missing.empty() ? "" : " and ", piece + 4);
  }
  return missing;
}

CompletionRequest DescribeRequest(std::string prompt, int attempt) {
  CompletionRequest request;
  request.tag = {"describe", "task", 1, attempt, "describe"};
  request.messages = {{Role::kSystem, "You write small, correct PyTorch reference programs in the KernelBench format."},
                      {Role::kUser, std::move(prompt)}};
  request.temperature = 0.2;
  return request;
}

}  // namespace

Result<WrittenTask> WriteTaskFromDescription(const std::string& description, const PromptLibrary& prompts,
                                             Provider& provider, const TaskCheck& check, int max_attempts) {
  std::string previous, feedback, last_problem = "the model gave no reply";
  bool reached = false;
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    ASSIGN_OR_RETURN(std::string prompt, prompts.Render("describe", {{"description", description},
                                                                     {"previous", previous},
                                                                     {"feedback", feedback}}));
    Completion reply = provider.Complete(DescribeRequest(std::move(prompt), attempt));
    if (!reply.ok() && reply.outcome != CallOutcome::kTruncatedReply) {
      last_problem = fmt::format("{}: {}", ToString(reply.outcome), reply.error);
      if (IsFatal(reply.outcome)) break;  // every later call would fail alike
      continue;
    }
    reached = true;
    Extraction extraction = ExtractDefining(reply.text, "Model");
    if (!extraction.ok()) {
      feedback = last_problem = extraction.message;
      continue;
    }
    previous = extraction.source;
    if (std::string missing = MissingPieces(extraction.source); !missing.empty()) {
      feedback = last_problem = "The program does not define " + missing + ", so it is not a task.";
      continue;
    }
    Status checked = check(extraction.source);
    if (checked.ok()) return WrittenTask{extraction.source, attempt};
    feedback = last_problem = checked.message();
  }
  std::string message = fmt::format("no task for \"{}\" after {} attempt(s): {}", description, max_attempts, last_problem);
  return reached ? Status::InvalidArgument(message) : Status::Unavailable(message);
}

std::string TaskNameFor(const std::string& description) {
  std::string name;
  bool gap = false;
  for (char c : description) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      if (gap && !name.empty()) name += '_';
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      gap = false;
    } else {
      gap = true;
    }
    if (name.size() >= 48) break;
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "task_" + name;
  return name;
}

}  // namespace kforge
