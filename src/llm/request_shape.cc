#include "llm/request_shape.h"

#include <algorithm>
#include <set>
#include <vector>

namespace kforge {
namespace {

constexpr int64_t kContextMargin = 256;

bool StartsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// OpenAI's reasoning models: o1, o3, o4-mini, gpt-5 and their snapshots.
bool IsOpenAiReasoningModel(const std::string& model) {
  for (const char* prefix : {"o1", "o3", "o4", "gpt-5"}) {
    if (StartsWith(model, prefix)) return true;
  }
  return false;
}

std::optional<int64_t> KnownContext(const std::string& kind, const std::string& model) {
  if (kind == "anthropic" || StartsWith(model, "claude")) return 200000;
  if (kind != "openai") return std::nullopt;  // a compatible server's context is whatever it was started with
  if (StartsWith(model, "gpt-5")) return 400000;
  if (StartsWith(model, "gpt-4.1")) return 1047576;
  if (StartsWith(model, "o1") || StartsWith(model, "o3") || StartsWith(model, "o4")) return 200000;
  if (StartsWith(model, "gpt-4o")) return 128000;
  return std::nullopt;
}

RequestShape FamilyDefaults(const std::string& kind, const std::string& model) {
  RequestShape shape;
  shape.context_tokens = KnownContext(kind, model);
  if (kind == "anthropic") {
    shape.max_output_tokens = 16384;
    shape.prompt_caching = true;  // the 14 KB system prompt is the same in every call
  } else if (kind == "openai" && IsOpenAiReasoningModel(model)) {
    shape.max_output_tokens = 32768;  // reasoning tokens count against the limit
    shape.max_tokens_field = "max_completion_tokens";
    shape.send_temperature = false;
  }
  return shape;
}

bool Matches(const std::string& pattern, const std::string& model) {
  if (!pattern.empty() && pattern.back() == '*') return StartsWith(model, pattern.substr(0, pattern.size() - 1));
  return pattern == model;
}

void Apply(const ShapeSettings& settings, RequestShape& shape) {
  if (settings.max_output_tokens) {
    shape.max_output_tokens = *settings.max_output_tokens;
    shape.max_output_configured = true;
  }
  if (settings.send_temperature) shape.send_temperature = *settings.send_temperature;
  if (settings.temperature) shape.temperature = settings.temperature;
  if (settings.reasoning_effort) shape.reasoning_effort = *settings.reasoning_effort;
  if (settings.thinking_tokens) shape.thinking_tokens = *settings.thinking_tokens;
  if (settings.extra_body) shape.extra_body = *settings.extra_body;
  if (settings.prompt_caching) shape.prompt_caching = *settings.prompt_caching;
  if (settings.context_tokens) shape.context_tokens = settings.context_tokens;
}

Status ReadInteger(const Json& value, const std::string& where, int64_t low, int64_t high, int64_t& out) {
  if (!value.is_number_integer() || value.get<int64_t>() < low || value.get<int64_t>() > high) {
    return Status::InvalidArgument(where + " must be a whole number from " + std::to_string(low) + " to " +
                                   std::to_string(high));
  }
  out = value.get<int64_t>();
  return Status::Ok();
}

}  // namespace

Json RequestShape::ToJson() const {
  Json json = {{"max_output_tokens", max_output_tokens}, {"max_tokens_field", max_tokens_field},
               {"send_temperature", send_temperature},   {"reasoning_effort", reasoning_effort},
               {"thinking_tokens", thinking_tokens},     {"extra_body", extra_body},
               {"prompt_caching", prompt_caching}};
  json["temperature"] = temperature ? Json(*temperature) : Json();
  json["context_tokens"] = context_tokens ? Json(*context_tokens) : Json();
  return json;
}

Result<ShapeSettings> ParseShapeSettings(const Json& json, const std::string& where) {
  static const std::set<std::string> known = {"max_output_tokens", "temperature",    "reasoning_effort", "thinking_tokens",
                                              "extra_body",        "prompt_caching", "context_tokens"};
  if (!json.is_object()) return Status::InvalidArgument(where + " must be a JSON object");
  ShapeSettings settings;
  for (const auto& [key, value] : json.items()) {
    const std::string at = where + "." + key;
    if (!known.count(key)) {
      std::string list;
      for (const std::string& name : known) list += (list.empty() ? "" : ", ") + name;
      return Status::InvalidArgument("unknown key \"" + key + "\" in " + where + "; expected one of " + list);
    }
    int64_t number = 0;
    if (key == "max_output_tokens") {
      RETURN_IF_ERROR(ReadInteger(value, at, 1, 10000000, number));
      settings.max_output_tokens = static_cast<int>(number);
    } else if (key == "context_tokens") {
      RETURN_IF_ERROR(ReadInteger(value, at, 1, 100000000, number));
      settings.context_tokens = number;
    } else if (key == "thinking_tokens") {
      RETURN_IF_ERROR(ReadInteger(value, at, 0, 10000000, number));
      settings.thinking_tokens = static_cast<int>(number);
    } else if (key == "temperature") {
      if (value.is_null()) {
        settings.send_temperature = false;
      } else if (value.is_number() && value.get<double>() >= 0 && value.get<double>() <= 2) {
        settings.send_temperature = true;
        settings.temperature = value.get<double>();
      } else {
        return Status::InvalidArgument(at + " must be null (never sent) or a number from 0 to 2");
      }
    } else if (key == "reasoning_effort") {
      static const std::set<std::string> efforts = {"minimal", "low", "medium", "high"};
      if (!value.is_string() || !efforts.count(value.get<std::string>())) {
        return Status::InvalidArgument(at + " must be one of minimal, low, medium, high");
      }
      settings.reasoning_effort = value.get<std::string>();
    } else if (key == "extra_body") {
      if (!value.is_object()) return Status::InvalidArgument(at + " must be a JSON object");
      settings.extra_body = value;
    } else if (key == "prompt_caching") {
      if (!value.is_boolean()) return Status::InvalidArgument(at + " must be true or false");
      settings.prompt_caching = value.get<bool>();
    }
  }
  return settings;
}

RequestShape ShapeFor(const std::string& kind, const std::string& model, const ShapeTable& configured) {
  RequestShape shape = FamilyDefaults(kind, model);
  std::vector<std::pair<size_t, const ShapeSettings*>> matching;
  for (const auto& [pattern, settings] : configured) {
    // An exact name is more specific than any prefix of the same length.
    if (Matches(pattern, model)) matching.emplace_back(pattern.back() == '*' ? pattern.size() - 1 : pattern.size() + 1, &settings);
  }
  std::stable_sort(matching.begin(), matching.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [specificity, settings] : matching) Apply(*settings, shape);
  return shape;
}

int64_t EstimatePromptTokens(const std::vector<Message>& messages) {
  int64_t tokens = 0;
  for (const Message& message : messages) tokens += 8 + static_cast<int64_t>(message.content.size() + 2) / 3;
  return tokens;
}

std::optional<int> OutputTokens(const RequestShape& shape, int requested, int64_t prompt_tokens) {
  int wanted = shape.max_output_configured || requested <= 0 ? shape.max_output_tokens : requested;
  if (!shape.context_tokens) return wanted;
  int64_t room = *shape.context_tokens - prompt_tokens - kContextMargin;
  if (room < std::min<int64_t>(kMinOutputTokens, wanted)) return std::nullopt;
  return static_cast<int>(std::min<int64_t>(wanted, room));
}

}  // namespace kforge
