// OpenAI's chat completions API (POST {base_url}/chat/completions), which also serves every
// OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp's server) by base URL; the key is
// sent as a Bearer token when there is one. Thread-safe.
#pragma once

#include <memory>
#include <utility>

#include "core/clock.h"
#include "llm/api_call.h"
#include "llm/http_transport.h"
#include "llm/retry_policy.h"

namespace kforge {

// The API's wire format; OpenAiProvider is HostedApiProvider with it.
WireFormat OpenAiWireFormat();

class OpenAiProvider : public HostedApiProvider {
 public:
  // `clock` must outlive the provider.
  OpenAiProvider(ApiProviderOptions options, std::shared_ptr<HttpTransport> transport, RetryPolicy retry,
                 const Clock& clock = RealClock())
      : HostedApiProvider(OpenAiWireFormat(), std::move(options), std::move(transport), std::move(retry), clock) {}
};

// The request body: {model, messages, temperature (unless the shape omits it), max_tokens (or
// max_completion_tokens), reasoning_effort (when set)}.
Json ChatCompletionBody(const CompletionRequest& request, const RequestShape& shape = {});
// A chat completion reply: choices[0].message.content, finish_reason and usage. finish_reason
// "length" is a truncated reply; no text is an empty one; anything else off the format is malformed.
Completion ParseChatCompletion(const Json& body);

}  // namespace kforge
