#include "llm/anthropic_provider.h"

#include <algorithm>

namespace kforge {
namespace {

constexpr char kApiVersion[] = "2023-06-01";

Completion Malformed(const std::string& what) {
  return FailedCompletion(CallOutcome::kMalformedReply, "the Anthropic messages reply " + what);
}

}  // namespace

WireFormat AnthropicWireFormat() {
  WireFormat format;
  format.path = "v1/messages";
  format.models_path = "v1/models";
  format.headers = [](const std::string& key) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!key.empty()) headers.emplace_back("x-api-key", key);
    headers.emplace_back("anthropic-version", kApiVersion);
    return headers;
  };
  format.body = AnthropicMessagesBody;
  format.parse_reply = ParseAnthropicMessage;
  return format;
}

Json AnthropicMessagesBody(const CompletionRequest& request, const RequestShape& shape) {
  std::string system;
  Json messages = Json::array();
  for (const Message& message : request.messages) {
    if (message.role == Role::kSystem) {
      system += (system.empty() ? "" : "\n\n") + message.content;
    } else {
      messages.push_back({{"role", ToString(message.role)}, {"content", message.content}});
    }
  }
  Json body = {{"model", request.model}, {"max_tokens", request.max_tokens}, {"messages", messages}};
  if (shape.thinking_tokens > 0) {
    // Extended thinking takes no temperature, and its budget counts inside max_tokens.
    body["thinking"] = {{"type", "enabled"}, {"budget_tokens", shape.thinking_tokens}};
    body["max_tokens"] = std::max(request.max_tokens, shape.thinking_tokens + kMinOutputTokens);
  } else if (shape.send_temperature) {
    body["temperature"] = shape.temperature.value_or(request.temperature);
  }
  if (system.empty()) return body;
  if (shape.prompt_caching) {
    body["system"] = Json::array({{{"type", "text"}, {"text", system}, {"cache_control", {{"type", "ephemeral"}}}}});
  } else {
    body["system"] = system;
  }
  return body;
}

Completion ParseAnthropicMessage(const Json& body) {
  const Json& content = JsonField(body, "content");
  if (!content.is_array()) return Malformed("has no content array");
  Completion completion;
  for (const Json& block : content) {
    if (JsonGet<std::string>(block, "type", "") != "text") continue;
    const Json& text = JsonField(block, "text");
    if (!text.is_string()) return Malformed("has a text block without text");
    completion.text += text.get<std::string>();
  }
  completion.finish_reason = JsonGet<std::string>(body, "stop_reason", "");
  const Json& usage = JsonField(body, "usage");
  // input_tokens counts only what was read without the cache.
  completion.cache_read_tokens = JsonGet<int64_t>(usage, "cache_read_input_tokens", 0);
  completion.cache_write_tokens = JsonGet<int64_t>(usage, "cache_creation_input_tokens", 0);
  completion.prompt_tokens = JsonGet<int64_t>(usage, "input_tokens", 0) + completion.cache_read_tokens +
                             completion.cache_write_tokens;
  completion.completion_tokens = JsonGet<int64_t>(usage, "output_tokens", 0);
  ClassifyReplyText(completion, completion.finish_reason == "max_tokens");
  return completion;
}

}  // namespace kforge
