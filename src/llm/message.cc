#include "llm/message.h"

#include <cctype>

#include "core/hash.h"
#include "store/records.h"

namespace kforge {

const char* ToString(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
  }
  return "unknown";
}

Result<Role> ParseRole(const std::string& text) {
  for (Role role : {Role::kSystem, Role::kUser, Role::kAssistant}) {
    if (text == ToString(role)) return role;
  }
  return Status::InvalidArgument("unknown message role '" + text + "'; expected system, user or assistant");
}

Json CallTag::ToJson() const {
  return {{"agent", agent}, {"scope", scope}, {"writer", writer}, {"round", round}, {"kind", kind}};
}

CallTag CallTag::FromJson(const Json& json) {
  CallTag tag;
  if (!json.is_object()) return tag;
  tag.agent = JsonGet<std::string>(json, "agent", "");
  tag.scope = JsonGet<std::string>(json, "scope", "");
  tag.writer = JsonGet<int>(json, "writer", 0);
  tag.round = JsonGet<int>(json, "round", 0);
  tag.kind = JsonGet<std::string>(json, "kind", "");
  return tag;
}

std::string RequestHash(const CompletionRequest& request) {
  Json identity = {{"model", request.model},
                   {"messages", MessagesToJson(request.messages)},
                   {"temperature", request.temperature},
                   {"max_tokens", request.max_tokens}};
  return Sha256Hex(CanonicalJsonText(identity));
}

std::string MaskNumbers(const std::string& text) {
  auto digit = [&](size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
  auto word = [&](size_t i) { return std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == '.'; };
  std::string masked;
  masked.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    if ((text[i] == '-' || text[i] == '+') && digit(i + 1) && (i == 0 || !word(i - 1))) ++i;
    if (!digit(i)) {
      masked += text[start];
      i = start + 1;
      continue;
    }
    while (digit(i)) ++i;
    if (i < text.size() && text[i] == '.' && digit(i + 1)) {
      ++i;
      while (digit(i)) ++i;
    }
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
      size_t exponent = i + 1;
      if (exponent < text.size() && (text[exponent] == '-' || text[exponent] == '+')) ++exponent;
      if (digit(exponent)) {
        i = exponent;
        while (digit(i)) ++i;
      }
    }
    masked += '#';
  }
  return masked;
}

std::string MaskedRequestHash(const CompletionRequest& request) {
  Json messages = Json::array();
  for (const Message& message : request.messages) {
    messages.push_back({{"role", ToString(message.role)}, {"content", MaskNumbers(message.content)}});
  }
  return Sha256Hex(CanonicalJsonText(Json{{"model", request.model}, {"messages", messages}}));
}

Json MessagesToJson(const std::vector<Message>& messages) {
  Json array = Json::array();
  for (const Message& message : messages) {
    array.push_back({{"role", ToString(message.role)}, {"content", message.content}});
  }
  return array;
}

Result<std::vector<Message>> MessagesFromJson(const Json& json) {
  if (!json.is_array()) return Status::InvalidArgument("\"messages\" must be an array");
  std::vector<Message> messages;
  for (size_t i = 0; i < json.size(); ++i) {
    const Json& item = json[i];
    const Json& content = JsonField(item, "content");
    if (!content.is_string()) {
      return Status::InvalidArgument("message " + std::to_string(i) + " needs a string \"content\"");
    }
    auto role = ParseRole(JsonGet<std::string>(item, "role", ""));
    if (!role.ok()) return role.status().WithContext("message " + std::to_string(i));
    messages.push_back({*role, content.get<std::string>()});
  }
  return messages;
}

std::string RenderPrompt(const std::vector<Message>& messages) {
  std::string text;
  for (const Message& message : messages) {
    if (!text.empty()) text += "\n";
    text += "## ";
    text += ToString(message.role);
    text += "\n\n";
    text += message.content;
    if (message.content.empty() || message.content.back() != '\n') text += "\n";
  }
  return text;
}

std::string LastUserMessage(const std::vector<Message>& messages) {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (it->role == Role::kUser) return it->content;
  }
  return "";
}

CompletionRequest WithDefaultModel(CompletionRequest request, const std::string& default_model) {
  if (request.model.empty()) request.model = default_model;
  return request;
}

}  // namespace kforge
