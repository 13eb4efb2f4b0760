// Prices per model: a built-in list of the common hosted models' list prices, dated, overlaid by
// the prices the user configured (which always win). A model is found by its exact name, or by
// that name without a snapshot suffix ("gpt-4o-2024-08-06" is priced as "gpt-4o",
// "claude-sonnet-4-5-20250929" as "claude-sonnet-4-5"). A call to a model without a price costs 0
// and is flagged as of unknown cost; kforge never guesses a price for an unlisted model.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "llm/completion.h"

namespace kforge {

struct ModelPrice {
  double input_usd_per_million = 0;   // prompt tokens read without a cache
  double output_usd_per_million = 0;  // completion tokens (reasoning tokens included)
  std::optional<double> cached_input_usd_per_million;  // prompt tokens read from the cache; unset: the input price
  std::optional<double> cache_write_usd_per_million;   // prompt tokens written to the cache; unset: the input price
};

// Model name (as sent, or without its snapshot suffix) to its price.
using PriceTable = std::map<std::string, ModelPrice>;

// When the built-in list prices were taken from the providers' pricing pages.
inline constexpr char kBuiltInPricesDate[] = "2025-11-24";

// OpenAI's and Anthropic's list prices for their common models as of kBuiltInPricesDate.
const PriceTable& BuiltInPrices();

// The built-in prices overlaid by `configured`.
PriceTable WithBuiltInPrices(const PriceTable& configured);

// The price of `model` in `prices`: by exact name, else by the name without a snapshot suffix
// (-YYYY-MM-DD, -YYYYMMDD or -latest). nullopt when neither is listed.
std::optional<ModelPrice> FindPrice(const PriceTable& prices, const std::string& model);

// The highest output price in `prices` (per million tokens); 0 for an empty table.
double HighestOutputPrice(const PriceTable& prices);

// Sets completion.cost_usd and cost_known from its model and token counts: cache reads and
// writes at their own prices, the rest of the prompt at the input price. A call that spent no
// tokens costs a known 0.
void ApplyPrice(const PriceTable& prices, Completion& completion);

}  // namespace kforge
