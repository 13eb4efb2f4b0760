// What is sent to a language model: a conversation of role-tagged messages plus sampling
// settings. Plain values; the hash and the rendering are pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kforge {

enum class Role { kSystem, kUser, kAssistant };

// "system", "user" or "assistant": the names both APIs and cassettes use.
const char* ToString(Role role);
// The inverse of ToString; anything else is InvalidArgument.
Result<Role> ParseRole(const std::string& text);

struct Message {
  Role role = Role::kUser;
  std::string content;
  bool operator==(const Message&) const = default;
};

// Which call of a run a request is, so that a replay can find its recorded reply when the prompt
// quotes numbers that differ from run to run: who asked ("writer", "describe"), in which pool
// ("whole", or a fusion group's name), the writer and round numbers, and the prompt's kind.
struct CallTag {
  std::string agent;
  std::string scope;
  int writer = 0;
  int round = 0;
  std::string kind;  // "write", "repair", "speedup", ...

  bool empty() const { return agent.empty(); }
  bool operator==(const CallTag&) const = default;
  Json ToJson() const;
  static CallTag FromJson(const Json& json);  // an empty tag for anything that is not one
};

struct CompletionRequest {
  std::string model;  // empty: the provider's default model
  std::vector<Message> messages;
  double temperature = 0.7;
  int max_tokens = 0;  // 0: the provider's limit for the model (see RequestShape)
  double timeout_s = 300;  // per attempt
  CallTag tag;             // not sent; not part of the request's identity
};

// sha256 of the canonical JSON of model, messages, temperature and max_tokens (the timeout does
// not change the answer, so it is not part of the identity).
std::string RequestHash(const CompletionRequest& request);

// `text` with every number (digits, with a sign after a non-word character, a fraction and an
// exponent) replaced by "#": "max error 1.5e-03 at [3, 17]" -> "max error # at [#, #]".
std::string MaskNumbers(const std::string& text);

// sha256 of the canonical JSON of model and messages with their numbers masked: equal for two
// requests that differ only in the numbers they quote (errors and times measured on fresh inputs).
std::string MaskedRequestHash(const CompletionRequest& request);

// [{"role": "user", "content": "..."}, ...]
Json MessagesToJson(const std::vector<Message>& messages);
// The inverse of MessagesToJson; InvalidArgument naming the first bad element.
Result<std::vector<Message>> MessagesFromJson(const Json& json);

// The conversation as plain text, each message under a "## <role>" header; what command
// providers read on stdin and what the store keeps as the prompt.
std::string RenderPrompt(const std::vector<Message>& messages);

// The content of the last user message, or "" when there is none.
std::string LastUserMessage(const std::vector<Message>& messages);

// `request` with its model set to `default_model` when it names none.
CompletionRequest WithDefaultModel(CompletionRequest request, const std::string& default_model);

}  // namespace kforge
