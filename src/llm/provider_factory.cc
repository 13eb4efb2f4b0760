#include "llm/provider_factory.h"

#include <algorithm>

#include "llm/anthropic_provider.h"
#include "llm/command_provider.h"
#include "llm/curl_transport.h"
#include "llm/openai_provider.h"
#include "llm/recording_provider.h"
#include "llm/replay_provider.h"
#include "sandbox/environment.h"

namespace kforge {
namespace {

std::string ValidKinds() {
  std::string text;
  for (const std::string& kind : ProviderKinds()) text += (text.empty() ? "" : ", ") + kind + ":";
  return text;
}

RetryPolicy MakeRetryPolicy(const LlmConfig& config, std::shared_ptr<CallActivity> activity) {
  return RetryPolicy(config.retry, MakeRealSleeper(), MakeRandomSource(), std::move(activity));
}

ApiProviderOptions ApiOptions(const std::string& kind, const EndpointConfig& endpoint, const std::string& key_variable,
                              const std::string& url_variable, const ProviderSpec& spec, const LlmConfig& config) {
  ApiProviderOptions options;
  options.name = kind;
  options.base_url = endpoint.base_url;
  options.api_key = endpoint.api_key;
  options.key_variable = key_variable;
  options.url_variable = url_variable;
  options.default_model = spec.argument;
  options.prices = WithBuiltInPrices(config.prices);
  options.shapes = config.models;
  options.timeout_s = config.timeout_s;
  return options;
}

Status RequireKey(const EndpointConfig& endpoint, const std::string& spec, const std::string& variable,
                  const std::string& config_key) {
  if (!endpoint.api_key.empty()) return Status::Ok();
  return Status::InvalidArgument(spec + " needs an API key: set " + variable + " in the environment (or " +
                                 config_key + " in the LLM config file)");
}

Result<std::unique_ptr<Provider>> MakeApiProvider(const ProviderSpec& spec, const std::string& text,
                                                  const LlmConfig& config, std::shared_ptr<CallActivity> activity) {
  auto transport = std::make_shared<CurlTransport>();
  if (spec.kind == "anthropic") {
    RETURN_IF_ERROR(RequireKey(config.anthropic, text, "ANTHROPIC_API_KEY", "anthropic.api_key"));
    return std::unique_ptr<Provider>(std::make_unique<AnthropicProvider>(
        ApiOptions("anthropic", config.anthropic, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", spec, config), transport,
        MakeRetryPolicy(config, activity)));
  }
  if (spec.kind == "openai") {
    RETURN_IF_ERROR(RequireKey(config.openai, text, "OPENAI_API_KEY", "openai.api_key"));
    return std::unique_ptr<Provider>(std::make_unique<OpenAiProvider>(
        ApiOptions("openai", config.openai, "OPENAI_API_KEY", "OPENAI_BASE_URL", spec, config), transport, MakeRetryPolicy(config, activity)));
  }
  if (config.compat.base_url.empty()) {
    return Status::InvalidArgument(text + " needs the server's base URL: set KFORGE_LLM_BASE_URL (for example "
                                          "http://localhost:8000/v1) or compat.base_url in the LLM config file");
  }
  return std::unique_ptr<Provider>(std::make_unique<OpenAiProvider>(
      ApiOptions("compat", config.compat, "KFORGE_LLM_API_KEY", "KFORGE_LLM_BASE_URL", spec, config), transport, MakeRetryPolicy(config, activity)));
}

}  // namespace

Result<ProviderSpec> ParseProviderSpec(const std::string& spec) {
  size_t colon = spec.find(':');
  ProviderSpec parsed{spec.substr(0, colon), colon == std::string::npos ? "" : spec.substr(colon + 1)};
  const auto& kinds = ProviderKinds();
  if (std::find(kinds.begin(), kinds.end(), parsed.kind) == kinds.end()) {
    return Status::InvalidArgument("unknown LLM provider \"" + spec + "\"; a provider spec starts with one of " +
                                   ValidKinds() + " (for example openai:gpt-4o)");
  }
  if (parsed.argument.find_first_not_of(" \t") == std::string::npos) {
    const char* what = parsed.kind == "command" ? "a command line" : parsed.kind == "replay" ? "a cassette path" : "a model";
    return Status::InvalidArgument("the LLM provider spec \"" + spec + "\" needs " + what + " after \"" + parsed.kind +
                                   ":\"");
  }
  return parsed;
}

Result<std::unique_ptr<Provider>> MakeProvider(const std::string& text, const LlmConfig& config,
                                               std::shared_ptr<CallActivity> activity) {
  ASSIGN_OR_RETURN(ProviderSpec spec, ParseProviderSpec(text));
  if (spec.kind == "replay") {
    ASSIGN_OR_RETURN(std::unique_ptr<ReplayProvider> replay, ReplayProvider::Open(spec.argument));
    return std::unique_ptr<Provider>(std::move(replay));
  }
  if (spec.kind == "command") {
    CommandOptions options;
    options.command = spec.argument;
    options.environment = ProcessEnvironment();
    options.timeout_s = config.timeout_s;
    return std::unique_ptr<Provider>(std::make_unique<CommandProvider>(std::move(options)));
  }
  return MakeApiProvider(spec, text, config, std::move(activity));
}

std::optional<ModelPrice> PriceOfSpec(const ProviderSpec& spec, const LlmConfig& config) {
  if (spec.kind == "replay") return ModelPrice{};
  if (spec.kind == "command") return std::nullopt;
  return FindPrice(WithBuiltInPrices(config.prices), spec.argument);
}

Result<std::unique_ptr<LimitedProvider>> MakeLimitedProvider(const std::string& text, const LlmConfig& config,
                                                             Store* store, std::optional<std::string> run_id,
                                                             const std::filesystem::path& record,
                                                             std::shared_ptr<CallActivity> activity) {
  ASSIGN_OR_RETURN(ProviderSpec spec, ParseProviderSpec(text));
  ASSIGN_OR_RETURN(std::unique_ptr<Provider> provider, MakeProvider(text, config, activity));
  if (!record.empty()) {
    ASSIGN_OR_RETURN(std::unique_ptr<RecordingProvider> recording, RecordingProvider::Open(record, std::move(provider)));
    provider = std::move(recording);
  }
  LimitOptions options;
  options.pool = std::make_shared<ConcurrencyPool>("llm:" + spec.kind, config.ConcurrencyFor(spec.kind));
  options.store = store;
  options.run_id = std::move(run_id);
  options.activity = std::move(activity);
  return std::make_unique<LimitedProvider>(std::move(provider), std::move(options));
}

}  // namespace kforge
