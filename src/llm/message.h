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

struct CompletionRequest {
  std::string model;  // empty: the provider's default model
  std::vector<Message> messages;
  double temperature = 0.7;
  int max_tokens = 8192;
  double timeout_s = 300;  // per attempt
};

// sha256 of the canonical JSON of model, messages, temperature and max_tokens (the timeout does
// not change the answer, so it is not part of the identity).
std::string RequestHash(const CompletionRequest& request);

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
