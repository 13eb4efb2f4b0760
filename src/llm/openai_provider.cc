#include "llm/openai_provider.h"

namespace kforge {
namespace {

Completion Malformed(const std::string& what, const Json& body) {
  std::string api_error = JsonGet<std::string>(JsonField(body, "error"), "message", "");
  return FailedCompletion(CallOutcome::kMalformedReply,
                          "the chat completion reply " + what + (api_error.empty() ? "" : ": " + api_error));
}

}  // namespace

WireFormat OpenAiWireFormat() {
  WireFormat format;
  format.path = "chat/completions";
  format.models_path = "models";
  format.headers = [](const std::string& key) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!key.empty()) headers.emplace_back("authorization", "Bearer " + key);
    return headers;
  };
  format.body = ChatCompletionBody;
  format.parse_reply = ParseChatCompletion;
  return format;
}

Json ChatCompletionBody(const CompletionRequest& request, const RequestShape& shape) {
  Json body = {{"model", request.model}, {"messages", MessagesToJson(request.messages)}};
  if (shape.send_temperature) body["temperature"] = shape.temperature.value_or(request.temperature);
  body[shape.max_tokens_field] = request.max_tokens;
  if (!shape.reasoning_effort.empty()) body["reasoning_effort"] = shape.reasoning_effort;
  return body;
}

Completion ParseChatCompletion(const Json& body) {
  const Json& choices = JsonField(body, "choices");
  if (!choices.is_array() || choices.empty()) return Malformed("has no choices", body);
  const Json& message = JsonField(choices[0], "message");
  const Json& content = JsonField(message, "content");
  if (!message.is_object() || !(content.is_string() || content.is_null())) {
    return Malformed("has no choices[0].message.content string", body);
  }
  Completion completion;
  completion.text = content.is_string() ? content.get<std::string>() : "";
  completion.finish_reason = JsonGet<std::string>(choices[0], "finish_reason", "");
  const Json& usage = JsonField(body, "usage");
  completion.prompt_tokens = JsonGet<int64_t>(usage, "prompt_tokens", 0);
  completion.completion_tokens = JsonGet<int64_t>(usage, "completion_tokens", 0);
  completion.cache_read_tokens = JsonGet<int64_t>(JsonField(usage, "prompt_tokens_details"), "cached_tokens", 0);
  ClassifyReplyText(completion, completion.finish_reason == "length");
  return completion;
}

}  // namespace kforge
