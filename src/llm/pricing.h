// Prices per model, as the user configured them; kforge never guesses one. A call to a model
// without a price costs 0 and is flagged as of unknown cost.
#pragma once

#include <map>
#include <string>

#include "llm/completion.h"

namespace kforge {

struct ModelPrice {
  double input_usd_per_million = 0;   // prompt tokens
  double output_usd_per_million = 0;  // completion tokens
};

// Model name (exactly as sent) to its price.
using PriceTable = std::map<std::string, ModelPrice>;

// Sets completion.cost_usd and cost_known from its model and token counts. A call that spent no
// tokens costs a known 0.
void ApplyPrice(const PriceTable& prices, Completion& completion);

}  // namespace kforge
