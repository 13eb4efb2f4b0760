// Providers from specs: "openai:MODEL", "anthropic:MODEL", "compat:MODEL" (any OpenAI-compatible
// server at the configured base URL), "command:SHELL COMMAND" and "replay:CASSETTE". A spec's
// model is what is sent when a request names none. Errors are InvalidArgument saying what to
// set or write instead; they never contain an API key.
#pragma once

#include <filesystem>
#include <map>

#include <memory>
#include <optional>
#include <string>

#include "llm/limited_provider.h"
#include "llm/routed_provider.h"
#include "llm/llm_config.h"
#include "llm/provider.h"
#include "store/store.h"

namespace kforge {

struct ProviderSpec {
  std::string kind;      // one of ProviderKinds()
  std::string argument;  // the model, command line or cassette path
};

// Splits "kind:argument" at the first colon; InvalidArgument for an unknown kind (listing the
// valid ones) or a missing argument.
Result<ProviderSpec> ParseProviderSpec(const std::string& spec);

// `activity`, when given, hears of the retries' waits.
Result<std::unique_ptr<Provider>> MakeProvider(const std::string& spec, const LlmConfig& config,
                                               std::shared_ptr<CallActivity> activity = nullptr);

// What a call of `spec` costs per token: its model's price (configured, else built-in), zero for
// a replay, nullopt when unknown (a model with no price, a command).
std::optional<ModelPrice> PriceOfSpec(const ProviderSpec& spec, const LlmConfig& config);

// MakeProvider's provider behind a LimitedProvider whose pool, "llm:KIND", has the configured
// depth; calls are recorded in `store` when it is given, and appended to the cassette `record`
// (replayable with replay:FILE) when that is not empty.
Result<std::unique_ptr<LimitedProvider>> MakeLimitedProvider(const std::string& spec, const LlmConfig& config,
                                                             Store* store, std::optional<std::string> run_id,
                                                             const std::filesystem::path& record = {},
                                                             std::shared_ptr<CallActivity> activity = nullptr);

// The providers of one stage, one model per role: `specs` maps tag kinds ("speedup", "describe")
// to the spec whose model answers them, and every other call goes to `spec`. Each distinct spec
// is a LimitedProvider; those of one provider kind share its pool, all share one cassette (when
// `record` is not empty), the store and `activity`. InvalidArgument for a bad spec.
Result<std::unique_ptr<RoutedProvider>> MakeRoutedProvider(const std::string& spec,
                                                           const std::map<std::string, std::string>& specs,
                                                           const LlmConfig& config, Store* store,
                                                           std::optional<std::string> run_id,
                                                           const std::filesystem::path& record = {},
                                                           std::shared_ptr<CallActivity> activity = nullptr);

}  // namespace kforge
