// One call of a hosted model's JSON HTTP API, from request body to Completion, and the provider
// built on it: what the OpenAI and Anthropic providers share (they differ only in their WireFormat). It retries through the RetryPolicy, times the call, turns HTTP
// failures into outcomes with words a user can act on, and keeps the API key out of every error.
// Only the reply's parsing differs between APIs; the caller passes it in.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "llm/completion.h"
#include "llm/http_transport.h"
#include "llm/message.h"
#include "llm/pricing.h"
#include "llm/provider.h"
#include "llm/request_shape.h"
#include "llm/retry_policy.h"

namespace kforge {

// How to reach one hosted API and what its calls cost.
struct ApiProviderOptions {
  std::string name;           // the provider kind recorded: "openai", "anthropic", "compat"
  std::string base_url;
  std::string api_key;        // may be empty for local OpenAI-compatible servers
  std::string key_variable;   // the setting named when the key is refused, e.g. "OPENAI_API_KEY"
  std::string url_variable;   // the setting named when the server cannot be reached, e.g. "OPENAI_BASE_URL"
  std::string default_model;  // sent when a request names no model
  PriceTable prices;
  ShapeTable shapes;                // the config's request settings by model pattern
  std::optional<double> timeout_s;  // per attempt; overrides the request's timeout when set
};

// Everything one call needs besides its body.
struct ApiCall {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // authentication included
  double timeout_s = 300;
  std::string secret;        // redacted from every error text
  std::string key_variable;  // named in the advice on an auth error
};

// Fills a Completion's text, finish reason, tokens and outcome from a reply body that is JSON.
using ReplyParser = std::function<Completion(const Json& body)>;

// Posts `body` and parses the reply; the returned Completion has latency and attempts set.
Completion CallJsonApi(HttpTransport& transport, const RetryPolicy& retry, const Clock& clock,
                       const ApiCall& call, const Json& body, const ReplyParser& parse_reply);

// What one hosted API looks like on the wire.
struct WireFormat {
  std::string path;         // appended to the base URL
  std::string models_path;  // the model listing (GET), appended to the base URL
  // The headers that carry the key (none when it is empty) and any the API requires.
  std::function<std::vector<std::pair<std::string, std::string>>(const std::string& api_key)> headers;
  // The body for a request whose max_tokens is already the limit to send.
  std::function<Json(const CompletionRequest&, const RequestShape&)> body;
  ReplyParser parse_reply;
};

// A provider for one hosted JSON API: fills the default model, shapes the request for the model
// (ShapeFor: output limit, sampling fields, extra body fields; a prompt that leaves no room for a
// reply in a known context is not sent), posts through the retry policy, prices the reply.
// Thread-safe.
class HostedApiProvider : public Provider {
 public:
  // `clock` must outlive the provider.
  HostedApiProvider(WireFormat format, ApiProviderOptions options, std::shared_ptr<HttpTransport> transport,
                    RetryPolicy retry, const Clock& clock);

  Completion Complete(const CompletionRequest& request) override;
  // GETs the model listing once, without retries: an unreachable server or a refused key is an
  // error; a listing that lacks the model, or a server without one, is a note.
  ProviderCheck Check() override;
  std::string name() const override { return options_.name; }
  std::string default_model() const override { return options_.default_model; }

 private:
  WireFormat format_;
  ApiProviderOptions options_;
  std::shared_ptr<HttpTransport> transport_;
  RetryPolicy retry_;
  const Clock& clock_;
};

// `base_url` and `path` joined with exactly one slash.
std::string JoinUrl(const std::string& base_url, const std::string& path);

// `text` with every occurrence of `secret` replaced by "[redacted]".
std::string Redact(std::string text, const std::string& secret);

}  // namespace kforge
