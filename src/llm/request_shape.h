// How a request to one model must look: which sampling fields it accepts, how many output tokens
// to ask for, reasoning effort, extra body fields, prompt caching and the context it fits in.
// Sensible defaults per provider family (OpenAI's reasoning models take no temperature and count
// output in max_completion_tokens; Anthropic's API caches the fixed system prompt), overlaid by
// the LLM config's "models" settings, the most specific pattern last. Plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/json.h"
#include "core/status.h"
#include "llm/message.h"

namespace kforge {

struct RequestShape {
  int max_output_tokens = 8192;
  bool max_output_configured = false;  // set by the config: it wins over a request's own limit
  std::string max_tokens_field = "max_tokens";  // "max_completion_tokens" for OpenAI's reasoning models
  bool send_temperature = true;
  std::optional<double> temperature;  // a fixed temperature instead of the request's
  std::string reasoning_effort;       // OpenAI-style "reasoning_effort" ("" = not sent)
  int thinking_tokens = 0;            // Anthropic extended thinking budget (0 = off; no temperature then)
  Json extra_body = Json::object();   // merged into the request body last
  bool prompt_caching = false;        // Anthropic: the system prompt is marked cacheable
  std::optional<int64_t> context_tokens;  // the model's context window, when known

  Json ToJson() const;
};

// One "models" entry of the LLM config: every field optional. "temperature": null means "never
// send one"; a number fixes it.
struct ShapeSettings {
  std::optional<int> max_output_tokens;
  std::optional<bool> send_temperature;
  std::optional<double> temperature;
  std::optional<std::string> reasoning_effort;
  std::optional<int> thinking_tokens;
  std::optional<Json> extra_body;
  std::optional<bool> prompt_caching;
  std::optional<int64_t> context_tokens;
};

// By model pattern: an exact name, or a prefix ending in "*" ("gpt-5*").
using ShapeTable = std::map<std::string, ShapeSettings>;

// A "models" entry from its JSON; InvalidArgument naming `where` and the bad key or value.
Result<ShapeSettings> ParseShapeSettings(const Json& json, const std::string& where);

// The shape for `model` served by provider kind `kind` ("openai", "anthropic", "compat"): the
// family's defaults, then every matching entry of `configured`, shorter patterns first.
RequestShape ShapeFor(const std::string& kind, const std::string& model, const ShapeTable& configured);

// A conservative estimate of the tokens `messages` take (about three characters a token, plus
// a few per message): high rather than low, so that the context check errs on the safe side.
int64_t EstimatePromptTokens(const std::vector<Message>& messages);

// The output tokens to ask for a request that wants `requested` (0: no wish): the configured
// limit, else the request's, else the family's; then cut to what fits the context
// after the prompt, with a margin. nullopt when even kMinOutputTokens do not fit: the call must
// not be sent.
inline constexpr int kMinOutputTokens = 1024;
std::optional<int> OutputTokens(const RequestShape& shape, int requested, int64_t prompt_tokens);

}  // namespace kforge
