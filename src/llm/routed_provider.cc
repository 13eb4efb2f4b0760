#include "llm/routed_provider.h"

#include <algorithm>

namespace kforge {

RoutedProvider::RoutedProvider(std::vector<Route> routes) : routes_(std::move(routes)) {}

const RoutedProvider::Route& RoutedProvider::RouteFor(const std::string& kind) const {
  for (const Route& route : routes_) {
    if (std::find(route.kinds.begin(), route.kinds.end(), kind) != route.kinds.end()) return route;
  }
  return routes_.front();
}

Completion RoutedProvider::Complete(const CompletionRequest& request) {
  // The request names no model of the default: its model is the one of the route.
  return RouteFor(request.tag.kind).provider->Complete(request);
}

ProviderCheck RoutedProvider::Check() {
  ProviderCheck all;
  for (Route& route : routes_) {
    ProviderCheck check = route.provider->Check();
    all.notes.insert(all.notes.end(), check.notes.begin(), check.notes.end());
    if (!check.status.ok() && all.status.ok()) {
      all.status = routes_.size() > 1 ? check.status.WithContext(route.spec) : check.status;
    }
  }
  return all;
}

UsageTotals RoutedProvider::Totals() const {
  UsageTotals sum;
  for (const Route& route : routes_) {
    UsageTotals each = route.provider->Totals();
    sum.calls += each.calls;
    sum.failures += each.failures;
    sum.prompt_tokens += each.prompt_tokens;
    sum.completion_tokens += each.completion_tokens;
    sum.cost_usd += each.cost_usd;
    sum.unpriced_calls += each.unpriced_calls;
    sum.estimated_tokens += each.estimated_tokens;
    sum.estimated_cost_usd += each.estimated_cost_usd;
  }
  return sum;
}

const std::string& RoutedProvider::SpecFor(const std::string& kind) const { return RouteFor(kind).spec; }

}  // namespace kforge
