// Anthropic's messages API (POST {base_url}/v1/messages, key in x-api-key, version 2023-06-01).
// System messages travel in the top-level "system" field; the reply's text blocks are joined.
// Thread-safe.
#pragma once

#include <memory>
#include <utility>

#include "core/clock.h"
#include "llm/api_call.h"
#include "llm/http_transport.h"
#include "llm/retry_policy.h"

namespace kforge {

// The API's wire format; AnthropicProvider is HostedApiProvider with it.
WireFormat AnthropicWireFormat();

class AnthropicProvider : public HostedApiProvider {
 public:
  // `clock` must outlive the provider.
  AnthropicProvider(ApiProviderOptions options, std::shared_ptr<HttpTransport> transport, RetryPolicy retry,
                    const Clock& clock = RealClock())
      : HostedApiProvider(AnthropicWireFormat(), std::move(options), std::move(transport), std::move(retry), clock) {}
};

// The request body: {model, max_tokens, temperature (unless omitted, or thinking), system (when
// any; a cacheable text block with prompt caching), thinking (with a budget), messages}; several
// system messages are joined by blank lines.
Json AnthropicMessagesBody(const CompletionRequest& request, const RequestShape& shape = {});
// A messages reply: content[] text blocks joined, stop_reason, usage.input_tokens/output_tokens.
// stop_reason "max_tokens" is a truncated reply; no text is an empty one.
Completion ParseAnthropicMessage(const Json& body);

}  // namespace kforge
