// One model per role: a provider that sends each call to the provider of its tag's kind ("write",
// "speedup", ...), and every other call to the first (the default). Its totals are those of all,
// and its check is every provider's. Thread-safe, as the providers it routes to are.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "llm/limited_provider.h"
#include "llm/provider.h"

namespace kforge {

class RoutedProvider : public Provider {
 public:
  struct Route {
    std::string spec;                          // "openai:gpt-5-mini", as the user wrote it
    std::unique_ptr<LimitedProvider> provider;
    std::vector<std::string> kinds;            // the call tag kinds it answers
  };

  // routes[0] is the default; at least one route.
  explicit RoutedProvider(std::vector<Route> routes);

  Completion Complete(const CompletionRequest& request) override;
  std::string name() const override { return routes_.front().provider->name(); }
  std::string default_model() const override { return routes_.front().provider->default_model(); }
  // Every route's check, notes gathered; the first failure names the spec that failed.
  ProviderCheck Check() override;

  // What every route's calls used, summed.
  UsageTotals Totals() const;
  // The spec that answers calls of tag kind `kind`.
  const std::string& SpecFor(const std::string& kind) const;
  size_t size() const { return routes_.size(); }

 private:
  const Route& RouteFor(const std::string& kind) const;

  std::vector<Route> routes_;
};

}  // namespace kforge
