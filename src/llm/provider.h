// A language model behind one call: messages in, a Completion out. Implementations are
// thread-safe: many kernel writers call one provider concurrently. Failures come back as
// Completions with a non-OK outcome, never as exceptions.
#pragma once

#include <string>

#include "llm/completion.h"
#include "llm/message.h"

namespace kforge {

class Provider {
 public:
  virtual ~Provider() = default;
  virtual Completion Complete(const CompletionRequest& request) = 0;
  // The provider kind as the store records it: "openai", "anthropic", "compat", "command", ...
  virtual std::string name() const = 0;
  // The model used when a request names none ("" when the provider has no notion of one). Wrappers
  // that hash requests fill it in first, so that a recording names the model that answered.
  virtual std::string default_model() const { return ""; }
};

}  // namespace kforge
