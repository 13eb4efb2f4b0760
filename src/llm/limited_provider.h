// Wraps a provider with a concurrency limit (a shared ConcurrencyPool) and accounts for what its
// calls used: running totals readable at any time, and, when given a Store, one LlmCallRecord
// per call (a failed write is logged; the call's reply is still returned). After a call fails
// fatally (IsFatal: a refused key, an exhausted quota), later calls are not sent: they fail at
// once with the same outcome, whatever thread asks. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "llm/call_activity.h"
#include "llm/concurrency_pool.h"
#include "llm/provider.h"
#include "store/store.h"

namespace kforge {

struct UsageTotals {
  int64_t calls = 0;
  int64_t failures = 0;  // calls whose outcome was not ok
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost_usd = 0;
  int64_t unpriced_calls = 0;  // calls of unknown cost: tokens at no configured price, or a command
  int64_t estimated_tokens = 0;   // Completion::estimated_tokens summed: attempts that may be billed unreported
  double estimated_cost_usd = 0;  // likewise
};

struct LimitOptions {
  std::shared_ptr<ConcurrencyPool> pool;  // may be shared by several providers; null: a private pool of depth 1
  Store* store = nullptr;                 // optional; must outlive the provider
  std::optional<std::string> run_id;      // recorded with each call
  std::shared_ptr<CallActivity> activity; // optional: told when calls queue, start and finish
};

class LimitedProvider : public Provider {
 public:
  LimitedProvider(std::unique_ptr<Provider> inner, LimitOptions options);

  // Waits for a slot, calls the inner provider with the request's model filled in, accounts.
  Completion Complete(const CompletionRequest& request) override;
  std::string name() const override { return inner_->name(); }
  std::string default_model() const override { return inner_->default_model(); }
  ProviderCheck Check() override { return inner_->Check(); }

  UsageTotals Totals() const;
  const ConcurrencyPool& pool() const { return *options_.pool; }

 private:
  std::optional<Completion> FatalSoFar() const;
  void Account(const CompletionRequest& request, const Completion& completion);
  void RecordInStore(const CompletionRequest& request, const Completion& completion);

  std::unique_ptr<Provider> inner_;
  LimitOptions options_;
  mutable std::mutex mutex_;
  UsageTotals totals_;  // guarded by mutex_
  std::optional<Completion> fatal_;  // the first fatal failure; guarded by mutex_
};

// The store's row for one call: the prompt rendered as text, the reply's text (or, for a failed
// call without text, its error), and the outcome as status.
LlmCallRecord MakeLlmCallRecord(const std::string& provider, const CompletionRequest& request,
                                const Completion& completion, const std::optional<std::string>& run_id);

}  // namespace kforge
