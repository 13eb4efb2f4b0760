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

namespace {

// MakeProvider's provider, recorded by `recorder` when given, behind a LimitedProvider on `pool`.
Result<std::unique_ptr<LimitedProvider>> LimitedOn(const std::string& text, const LlmConfig& config,
                                                   std::shared_ptr<ConcurrencyPool> pool,
                                                   std::shared_ptr<CassetteWriter> recorder, Store* store,
                                                   std::optional<std::string> run_id,
                                                   std::shared_ptr<CallActivity> activity) {
  ASSIGN_OR_RETURN(std::unique_ptr<Provider> provider, MakeProvider(text, config, activity));
  if (recorder) provider = std::make_unique<RecordingProvider>(std::move(recorder), std::move(provider));
  LimitOptions options;
  options.pool = std::move(pool);
  options.store = store;
  options.run_id = std::move(run_id);
  options.activity = std::move(activity);
  return std::make_unique<LimitedProvider>(std::move(provider), std::move(options));
}

std::shared_ptr<ConcurrencyPool> PoolOf(const ProviderSpec& spec, const LlmConfig& config) {
  return std::make_shared<ConcurrencyPool>("llm:" + spec.kind, config.ConcurrencyFor(spec.kind));
}

}  // namespace

Result<std::unique_ptr<LimitedProvider>> MakeLimitedProvider(const std::string& text, const LlmConfig& config,
                                                             Store* store, std::optional<std::string> run_id,
                                                             const std::filesystem::path& record,
                                                             std::shared_ptr<CallActivity> activity) {
  ASSIGN_OR_RETURN(ProviderSpec spec, ParseProviderSpec(text));
  std::shared_ptr<CassetteWriter> recorder;
  if (!record.empty()) {
    ASSIGN_OR_RETURN(recorder, CassetteWriter::Open(record));
  }
  return LimitedOn(text, config, PoolOf(spec, config), std::move(recorder), store, std::move(run_id), std::move(activity));
}

Result<std::unique_ptr<RoutedProvider>> MakeRoutedProvider(const std::string& text,
                                                           const std::map<std::string, std::string>& specs,
                                                           const LlmConfig& config, Store* store,
                                                           std::optional<std::string> run_id,
                                                           const std::filesystem::path& record,
                                                           std::shared_ptr<CallActivity> activity) {
  std::shared_ptr<CassetteWriter> recorder;
  if (!record.empty()) {
    ASSIGN_OR_RETURN(recorder, CassetteWriter::Open(record));
  }
  std::map<std::string, std::shared_ptr<ConcurrencyPool>> pools;  // by provider kind
  std::vector<std::string> distinct = {text};
  for (const auto& [kind, routed] : specs) {
    if (std::find(distinct.begin(), distinct.end(), routed) == distinct.end()) distinct.push_back(routed);
  }
  std::vector<RoutedProvider::Route> routes;
  for (const std::string& each : distinct) {
    ASSIGN_OR_RETURN(ProviderSpec spec, ParseProviderSpec(each));
    std::shared_ptr<ConcurrencyPool>& pool = pools[spec.kind];
    if (!pool) pool = PoolOf(spec, config);
    ASSIGN_OR_RETURN(std::unique_ptr<LimitedProvider> provider,
                     LimitedOn(each, config, pool, recorder, store, run_id, activity));
    RoutedProvider::Route route{each, std::move(provider), {}};
    for (const auto& [kind, routed] : specs) {
      if (routed == each) route.kinds.push_back(kind);
    }
    routes.push_back(std::move(route));
  }
  return std::make_unique<RoutedProvider>(std::move(routes));
}

}  // namespace kforge
