#include "llm/pricing.h"

namespace kforge {

void ApplyPrice(const PriceTable& prices, Completion& completion) {
  auto it = prices.find(completion.model);
  if (it == prices.end()) {
    completion.cost_usd = 0;
    completion.cost_known = completion.prompt_tokens == 0 && completion.completion_tokens == 0;
    return;
  }
  const ModelPrice& price = it->second;
  completion.cost_usd = (static_cast<double>(completion.prompt_tokens) * price.input_usd_per_million +
                         static_cast<double>(completion.completion_tokens) * price.output_usd_per_million) /
                        1e6;
  completion.cost_known = true;
}

}  // namespace kforge
