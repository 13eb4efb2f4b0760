// How kforge reaches language models: base URLs, API keys, prices, concurrency, timeouts and
// retries. Read from an optional JSON file, then overlaid by the environment (OPENAI_API_KEY,
// OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, KFORGE_LLM_BASE_URL, KFORGE_LLM_API_KEY).
// The file looks like
//   {"openai": {"base_url": "...", "api_key": "..."}, "anthropic": {...}, "compat": {...},
//    "prices": {"MODEL": {"input_usd_per_million": 2.5, "output_usd_per_million": 10}},
//    "models": {"gpt-5*": {"max_output_tokens": 65536, "reasoning_effort": "high"},
//               "qwen-coder": {"context_tokens": 32768, "temperature": null, "extra_body": {...}}},
//    "max_concurrency": {"openai": 8, "command": 2}, "timeout_s": 300, "max_attempts": 5,
//    "retry_base_delay_s": 1, "retry_max_delay_s": 60, "max_retry_after_s": 120}
// with every key optional. API keys are held here only to be sent; nothing prints a config.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "llm/pricing.h"
#include "llm/request_shape.h"
#include "llm/retry_policy.h"

namespace kforge {

struct EndpointConfig {
  std::string base_url;
  std::string api_key;
};

struct LlmConfig {
  static constexpr int kDefaultConcurrency = 4;

  EndpointConfig openai{"https://api.openai.com/v1", ""};
  EndpointConfig anthropic{"https://api.anthropic.com", ""};
  EndpointConfig compat;  // an OpenAI-compatible server; compat: needs its base_url
  PriceTable prices;
  ShapeTable models;                           // request settings by model pattern
  std::map<std::string, int> max_concurrency;  // by provider kind ("openai", "command", ...)
  std::optional<double> timeout_s;             // per attempt; unset: each request's own
  RetryOptions retry;

  // The concurrency limit for provider kind `kind`: configured, or kDefaultConcurrency.
  int ConcurrencyFor(const std::string& kind) const;
};

// The provider kinds a spec may name, in the order messages list them.
const std::vector<std::string>& ProviderKinds();

// A config from a parsed file; InvalidArgument naming the first unknown key or bad value.
Result<LlmConfig> ParseLlmConfig(const Json& json);

// Sets keys and base URLs from the variables above; unset and empty variables change nothing.
void OverlayEnvironment(const std::map<std::string, std::string>& env, LlmConfig& config);

// The file at `path` (no file when the path is empty) overlaid by `env`. NotFound when a
// named file is missing; InvalidArgument naming the file when it is malformed.
Result<LlmConfig> LoadLlmConfig(const std::filesystem::path& path, const std::map<std::string, std::string>& env);

}  // namespace kforge
