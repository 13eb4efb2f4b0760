// A language model behind one call: messages in, a Completion out. Implementations are
// thread-safe: many kernel writers call one provider concurrently. Failures come back as
// Completions with a non-OK outcome, never as exceptions.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "llm/completion.h"
#include "llm/message.h"

namespace kforge {

// What a provider found out before any paid call. `status` is not OK when no call can succeed (a
// refused key, an unreachable server), with words saying what to do; `notes` are things worth
// telling the user that do not stop the run.
struct ProviderCheck {
  Status status;
  std::vector<std::string> notes;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual Completion Complete(const CompletionRequest& request) = 0;
  // The provider kind as the store records it: "openai", "anthropic", "compat", "command", ...
  virtual std::string name() const = 0;
  // The model used when a request names none ("" when the provider has no notion of one). Wrappers
  // that hash requests fill it in first, so that a recording names the model that answered.
  virtual std::string default_model() const { return ""; }
  // A cheap look at the provider before the first call (a hosted API's model listing); costs no
  // tokens. Providers with nothing to check answer OK.
  virtual ProviderCheck Check() { return {}; }
};

}  // namespace kforge
