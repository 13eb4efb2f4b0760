#include "llm/limited_provider.h"

#include "core/log.h"

namespace kforge {

LimitedProvider::LimitedProvider(std::unique_ptr<Provider> inner, LimitOptions options)
    : inner_(std::move(inner)), options_(std::move(options)) {
  if (!options_.pool) options_.pool = std::make_shared<ConcurrencyPool>("llm:" + inner_->name(), 1);
}

Completion LimitedProvider::Complete(const CompletionRequest& original) {
  CompletionRequest request = WithDefaultModel(original, inner_->default_model());
  Completion completion;
  {
    if (options_.activity) options_.activity->Queued();
    ConcurrencyPool::Slot slot(*options_.pool);
    if (options_.activity) options_.activity->Started();
    if (std::optional<Completion> fatal = FatalSoFar()) {
      if (options_.activity) options_.activity->Finished();
      return FailedCompletion(fatal->outcome, "not sent: an earlier call failed for good: " + fatal->error);
    }
    completion = inner_->Complete(request);
    if (options_.activity) options_.activity->Finished();
  }
  if (IsFatal(completion.outcome)) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fatal_) fatal_ = completion;
  }
  Account(request, completion);
  return completion;
}

std::optional<Completion> LimitedProvider::FatalSoFar() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fatal_;
}

UsageTotals LimitedProvider::Totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return totals_;
}

void LimitedProvider::Account(const CompletionRequest& request, const Completion& completion) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++totals_.calls;
    if (!completion.ok()) ++totals_.failures;
    totals_.prompt_tokens += completion.prompt_tokens;
    totals_.completion_tokens += completion.completion_tokens;
    totals_.cost_usd += completion.cost_usd;
    if (!completion.cost_known) ++totals_.unpriced_calls;
    totals_.estimated_tokens += completion.estimated_tokens;
    totals_.estimated_cost_usd += completion.estimated_cost_usd;
  }
  if (options_.store) RecordInStore(request, completion);
}

void LimitedProvider::RecordInStore(const CompletionRequest& request, const Completion& completion) {
  auto recorded = options_.store->RecordLlmCall(MakeLlmCallRecord(inner_->name(), request, completion, options_.run_id));
  if (!recorded.ok()) LogInfo("warning: this LLM call was not recorded in the store: {}", recorded.status().message());
}

LlmCallRecord MakeLlmCallRecord(const std::string& provider, const CompletionRequest& request,
                                const Completion& completion, const std::optional<std::string>& run_id) {
  LlmCallRecord record;
  record.run_id = run_id;
  record.provider = provider;
  record.model = completion.model.empty() ? request.model : completion.model;
  record.prompt = RenderPrompt(request.messages);
  record.reply = completion.text.empty() && !completion.ok() ? completion.error : completion.text;
  record.prompt_tokens = completion.prompt_tokens;
  record.completion_tokens = completion.completion_tokens;
  record.cost_usd = completion.cost_usd;
  record.latency_s = completion.latency_s;
  record.status = ToString(completion.outcome);
  record.estimated_tokens = completion.estimated_tokens;
  record.estimated_cost_usd = completion.estimated_cost_usd;
  for (size_t i = 0; i < completion.attempt_log.size(); ++i) {
    const CallAttempt& attempt = completion.attempt_log[i];
    record.attempts.push_back({static_cast<int>(i + 1), attempt.http_status, ToString(attempt.outcome), attempt.seconds,
                               attempt.waited_s, attempt.maybe_billed, attempt.error});
  }
  return record;
}

}  // namespace kforge
