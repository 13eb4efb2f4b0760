#include "llm/llm_config.h"

#include <algorithm>

#include "core/files.h"

namespace kforge {
namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

Status CheckKeys(const Json& object, const std::vector<std::string>& known, const std::string& where) {
  if (!object.is_object()) return Status::InvalidArgument(where + " must be a JSON object");
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Status::InvalidArgument("unknown key \"" + key + "\" in " + where + "; expected one of " + JoinNames(known));
    }
  }
  return Status::Ok();
}

Status ReadString(const Json& object, const char* key, const std::string& where, std::string& out) {
  const Json& value = JsonField(object, key);
  if (value.is_null()) return Status::Ok();
  if (!value.is_string()) return Status::InvalidArgument(where + "." + key + " must be a string");
  out = value.get<std::string>();
  return Status::Ok();
}

Status ReadPositive(const Json& value, const std::string& where, double& out, bool allow_zero = false) {
  if (!value.is_number() || value.get<double>() < 0 || (!allow_zero && value.get<double>() == 0)) {
    return Status::InvalidArgument(where + " must be a " + (allow_zero ? "non-negative" : "positive") + " number");
  }
  out = value.get<double>();
  return Status::Ok();
}

Status ReadCount(const Json& value, const std::string& where, int& out) {
  if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 100000) {
    return Status::InvalidArgument(where + " must be a whole number of at least 1");
  }
  out = value.get<int>();
  return Status::Ok();
}

Status ReadEndpoint(const Json& json, const char* key, EndpointConfig& endpoint) {
  const Json& object = JsonField(json, key);
  if (object.is_null()) return Status::Ok();
  RETURN_IF_ERROR(CheckKeys(object, {"base_url", "api_key"}, key));
  RETURN_IF_ERROR(ReadString(object, "base_url", key, endpoint.base_url));
  return ReadString(object, "api_key", key, endpoint.api_key);
}

Status ReadPrices(const Json& prices, PriceTable& table) {
  if (prices.is_null()) return Status::Ok();
  if (!prices.is_object()) return Status::InvalidArgument("prices must be an object keyed by model name");
  for (const auto& [model, price] : prices.items()) {
    std::string where = "prices." + model;
    RETURN_IF_ERROR(CheckKeys(price, {"input_usd_per_million", "output_usd_per_million", "cached_input_usd_per_million",
                                      "cache_write_usd_per_million"}, where));
    for (const char* key : {"input_usd_per_million", "output_usd_per_million"}) {
      if (!price.contains(key)) return Status::InvalidArgument(where + " needs " + key);
    }
    ModelPrice& entry = table[model];
    RETURN_IF_ERROR(ReadPositive(price["input_usd_per_million"], where + ".input_usd_per_million",
                                 entry.input_usd_per_million, /*allow_zero=*/true));
    RETURN_IF_ERROR(ReadPositive(price["output_usd_per_million"], where + ".output_usd_per_million",
                                 entry.output_usd_per_million, /*allow_zero=*/true));
    for (auto [key, out] : {std::pair{"cached_input_usd_per_million", &entry.cached_input_usd_per_million},
                            std::pair{"cache_write_usd_per_million", &entry.cache_write_usd_per_million}}) {
      if (!price.contains(key)) continue;
      double value = 0;
      RETURN_IF_ERROR(ReadPositive(price[key], where + "." + key, value, /*allow_zero=*/true));
      *out = value;
    }
  }
  return Status::Ok();
}

Status ReadShapes(const Json& models, ShapeTable& table) {
  if (models.is_null()) return Status::Ok();
  if (!models.is_object()) return Status::InvalidArgument("models must be an object keyed by model name or prefix*");
  for (const auto& [pattern, settings] : models.items()) {
    ASSIGN_OR_RETURN(table[pattern], ParseShapeSettings(settings, "models." + pattern));
  }
  return Status::Ok();
}

Status ReadConcurrency(const Json& limits, std::map<std::string, int>& out) {
  if (limits.is_null()) return Status::Ok();
  RETURN_IF_ERROR(CheckKeys(limits, ProviderKinds(), "max_concurrency"));
  for (const auto& [kind, value] : limits.items()) {
    RETURN_IF_ERROR(ReadCount(value, "max_concurrency." + kind, out[kind]));
  }
  return Status::Ok();
}

Status ReadRetry(const Json& json, RetryOptions& retry) {
  if (json.contains("max_attempts")) RETURN_IF_ERROR(ReadCount(json["max_attempts"], "max_attempts", retry.max_attempts));
  struct Field {
    const char* key;
    double* out;
  };
  for (Field field : {Field{"retry_base_delay_s", &retry.base_delay_s}, Field{"retry_max_delay_s", &retry.max_delay_s},
                      Field{"max_retry_after_s", &retry.max_retry_after_s}}) {
    if (json.contains(field.key)) RETURN_IF_ERROR(ReadPositive(json[field.key], field.key, *field.out, true));
  }
  return Status::Ok();
}

void OverlayVariable(const std::map<std::string, std::string>& env, const char* name, std::string& out) {
  auto it = env.find(name);
  if (it != env.end() && !it->second.empty()) out = it->second;
}

}  // namespace

int LlmConfig::ConcurrencyFor(const std::string& kind) const {
  auto it = max_concurrency.find(kind);
  return it == max_concurrency.end() ? kDefaultConcurrency : it->second;
}

const std::vector<std::string>& ProviderKinds() {
  static const std::vector<std::string> kinds = {"openai", "anthropic", "compat", "command", "replay"};
  return kinds;
}

Result<LlmConfig> ParseLlmConfig(const Json& json) {
  RETURN_IF_ERROR(CheckKeys(json,
                            {"openai", "anthropic", "compat", "prices", "models", "max_concurrency", "timeout_s", "max_attempts",
                             "retry_base_delay_s", "retry_max_delay_s", "max_retry_after_s"},
                            "the LLM config"));
  LlmConfig config;
  RETURN_IF_ERROR(ReadEndpoint(json, "openai", config.openai));
  RETURN_IF_ERROR(ReadEndpoint(json, "anthropic", config.anthropic));
  RETURN_IF_ERROR(ReadEndpoint(json, "compat", config.compat));
  RETURN_IF_ERROR(ReadPrices(JsonField(json, "prices"), config.prices));
  RETURN_IF_ERROR(ReadShapes(JsonField(json, "models"), config.models));
  RETURN_IF_ERROR(ReadConcurrency(JsonField(json, "max_concurrency"), config.max_concurrency));
  if (json.contains("timeout_s")) {
    double timeout_s = 0;
    RETURN_IF_ERROR(ReadPositive(json["timeout_s"], "timeout_s", timeout_s));
    config.timeout_s = timeout_s;
  }
  RETURN_IF_ERROR(ReadRetry(json, config.retry));
  return config;
}

void OverlayEnvironment(const std::map<std::string, std::string>& env, LlmConfig& config) {
  OverlayVariable(env, "OPENAI_API_KEY", config.openai.api_key);
  OverlayVariable(env, "OPENAI_BASE_URL", config.openai.base_url);
  OverlayVariable(env, "ANTHROPIC_API_KEY", config.anthropic.api_key);
  OverlayVariable(env, "ANTHROPIC_BASE_URL", config.anthropic.base_url);
  OverlayVariable(env, "KFORGE_LLM_API_KEY", config.compat.api_key);
  OverlayVariable(env, "KFORGE_LLM_BASE_URL", config.compat.base_url);
}

Result<LlmConfig> LoadLlmConfig(const std::filesystem::path& path, const std::map<std::string, std::string>& env) {
  LlmConfig config;
  if (!path.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    ASSIGN_OR_RETURN(Json json, ParseJson(text, "the LLM config " + path.string()));
    auto parsed = ParseLlmConfig(json);
    if (!parsed.ok()) return parsed.status().WithContext(path.string());
    config = std::move(parsed).value();
  }
  OverlayEnvironment(env, config);
  return config;
}

}  // namespace kforge
