// Turns a plain-language description ("row-wise softmax over 4096x8192 fp32") into a
// KernelBench-format task: a model writes `Model`, `get_inputs`, `get_init_inputs` and
// `KFORGE_CPU_SIZES` from prompts/describe.md; `check` (the caller saves and loads the program)
// judges each version, and what it says goes back to the model, up to `max_attempts` times.
#pragma once

#include <functional>
#include <string>

#include "agents/prompt_library.h"
#include "core/status.h"
#include "llm/provider.h"

namespace kforge {

// OK when the program loads and runs as a task; otherwise what is wrong, in words for the model.
using TaskCheck = std::function<Status(const std::string& source)>;

struct WrittenTask {
  std::string source;
  int attempts = 0;
};

// InvalidArgument when no version passed `check` (the last problem is in the message);
// Unavailable when the model could not be reached or gave nothing usable each time.
Result<WrittenTask> WriteTaskFromDescription(const std::string& description, const PromptLibrary& prompts,
                                             Provider& provider, const TaskCheck& check, int max_attempts = 3);

// A file name for a described task: its words in lower case joined by '_', at most 48 characters.
std::string TaskNameFor(const std::string& description);

}  // namespace kforge
