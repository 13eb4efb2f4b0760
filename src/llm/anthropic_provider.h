// Anthropic's messages API (POST {base_url}/v1/messages, key in x-api-key, version 2023-06-01).
// System messages travel in the top-level "system" field; the reply's text blocks are joined.
// Thread-safe.
#pragma once

#include <memory>

#include "core/clock.h"
#include "llm/api_call.h"
#include "llm/http_transport.h"
#include "llm/provider.h"
#include "llm/retry_policy.h"

namespace kforge {

class AnthropicProvider : public Provider {
 public:
  // `clock` must outlive the provider.
  AnthropicProvider(ApiProviderOptions options, std::shared_ptr<HttpTransport> transport, RetryPolicy retry,
                    const Clock& clock = RealClock());

  Completion Complete(const CompletionRequest& request) override;
  std::string name() const override { return options_.name; }
  std::string default_model() const override { return options_.default_model; }

 private:
  ApiProviderOptions options_;
  std::shared_ptr<HttpTransport> transport_;
  RetryPolicy retry_;
  const Clock& clock_;
};

// The request body: {model, max_tokens, temperature, system (when any), messages}; several system
// messages are joined by blank lines.
Json AnthropicMessagesBody(const CompletionRequest& request);
// A messages reply: content[] text blocks joined, stop_reason, usage.input_tokens/output_tokens.
// stop_reason "max_tokens" is a truncated reply; no text is an empty one.
Completion ParseAnthropicMessage(const Json& body);

}  // namespace kforge
