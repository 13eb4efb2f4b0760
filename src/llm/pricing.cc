#include "llm/pricing.h"

#include <algorithm>
#include <cctype>

namespace kforge {
namespace {

bool AllDigits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "gpt-4o-2024-08-06" -> "gpt-4o", "claude-sonnet-4-5-20250929" -> "claude-sonnet-4-5",
// "claude-3-5-haiku-latest" -> "claude-3-5-haiku"; anything else unchanged.
std::string WithoutSnapshot(const std::string& model) {
  const std::string latest = "-latest";
  if (model.size() > latest.size() && model.compare(model.size() - latest.size(), latest.size(), latest) == 0) {
    return model.substr(0, model.size() - latest.size());
  }
  size_t dash = model.rfind('-');
  if (dash != std::string::npos && model.size() - dash - 1 == 8 && AllDigits(model.substr(dash + 1))) {
    return model.substr(0, dash);  // -YYYYMMDD
  }
  const size_t n = model.size();
  if (n > 11 && model[n - 11] == '-' && model[n - 6] == '-' && model[n - 3] == '-' && AllDigits(model.substr(n - 10, 4)) &&
      AllDigits(model.substr(n - 5, 2)) && AllDigits(model.substr(n - 2))) {
    return model.substr(0, model.size() - 11);  // -YYYY-MM-DD
  }
  return model;
}

ModelPrice OpenAi(double input, double cached_input, double output) { return {input, output, cached_input, std::nullopt}; }

// Anthropic bills cache writes (5-minute) at 1.25x and cache reads at 0.1x of the input price.
ModelPrice Anthropic(double input, double output) { return {input, output, input * 0.1, input * 1.25}; }

}  // namespace

const PriceTable& BuiltInPrices() {
  static const PriceTable prices = {
      {"gpt-4o", OpenAi(2.50, 1.25, 10.00)},
      {"gpt-4o-mini", OpenAi(0.15, 0.075, 0.60)},
      {"gpt-4.1", OpenAi(2.00, 0.50, 8.00)},
      {"gpt-4.1-mini", OpenAi(0.40, 0.10, 1.60)},
      {"gpt-4.1-nano", OpenAi(0.10, 0.025, 0.40)},
      {"o1", OpenAi(15.00, 7.50, 60.00)},
      {"o3", OpenAi(2.00, 0.50, 8.00)},
      {"o3-mini", OpenAi(1.10, 0.55, 4.40)},
      {"o4-mini", OpenAi(1.10, 0.275, 4.40)},
      {"gpt-5", OpenAi(1.25, 0.125, 10.00)},
      {"gpt-5-mini", OpenAi(0.25, 0.025, 2.00)},
      {"gpt-5-nano", OpenAi(0.05, 0.005, 0.40)},
      {"claude-opus-4-5", Anthropic(5.00, 25.00)},
      {"claude-opus-4-1", Anthropic(15.00, 75.00)},
      {"claude-opus-4-0", Anthropic(15.00, 75.00)},
      {"claude-opus-4", Anthropic(15.00, 75.00)},
      {"claude-sonnet-4-5", Anthropic(3.00, 15.00)},
      {"claude-sonnet-4-0", Anthropic(3.00, 15.00)},
      {"claude-sonnet-4", Anthropic(3.00, 15.00)},
      {"claude-3-7-sonnet", Anthropic(3.00, 15.00)},
      {"claude-haiku-4-5", Anthropic(1.00, 5.00)},
      {"claude-3-5-haiku", Anthropic(0.80, 4.00)},
  };
  return prices;
}

PriceTable WithBuiltInPrices(const PriceTable& configured) {
  PriceTable prices = BuiltInPrices();
  for (const auto& [model, price] : configured) prices[model] = price;
  return prices;
}

std::optional<ModelPrice> FindPrice(const PriceTable& prices, const std::string& model) {
  auto it = prices.find(model);
  if (it == prices.end()) it = prices.find(WithoutSnapshot(model));
  if (it == prices.end()) return std::nullopt;
  return it->second;
}

double HighestOutputPrice(const PriceTable& prices) {
  double highest = 0;
  for (const auto& [model, price] : prices) highest = std::max(highest, price.output_usd_per_million);
  return highest;
}

void ApplyPrice(const PriceTable& prices, Completion& completion) {
  std::optional<ModelPrice> price = FindPrice(prices, completion.model);
  if (!price) {
    completion.cost_usd = 0;
    completion.cost_known = completion.prompt_tokens == 0 && completion.completion_tokens == 0;
    return;
  }
  int64_t cached = std::min(completion.cache_read_tokens, completion.prompt_tokens);
  int64_t written = std::min(completion.cache_write_tokens, completion.prompt_tokens - cached);
  int64_t uncached = completion.prompt_tokens - cached - written;
  completion.cost_usd = (static_cast<double>(uncached) * price->input_usd_per_million +
                         static_cast<double>(cached) * price->cached_input_usd_per_million.value_or(price->input_usd_per_million) +
                         static_cast<double>(written) * price->cache_write_usd_per_million.value_or(price->input_usd_per_million) +
                         static_cast<double>(completion.completion_tokens) * price->output_usd_per_million) /
                        1e6;
  completion.cost_known = true;
}

}  // namespace kforge
