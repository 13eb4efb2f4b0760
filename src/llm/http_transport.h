// One HTTP POST (or GET), behind an interface so that providers can be tested against scripted replies.
// A transport never retries and never throws: a reply of any status is a response, and a call
// that got no reply says why in `transport_failure`. Implementations are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llm/completion.h"

namespace kforge {

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  double timeout_s = 300;
};

struct HttpResponse {
  int status = 0;  // 0 when there was no reply
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  CallOutcome transport_failure = CallOutcome::kOk;  // kTimeout or kNetworkError when no reply came
  std::string transport_error;
  bool request_sent = true;  // false when no connection was made (nothing can have been billed)

  // The first value of header `lower_case_name`, if any.
  std::optional<std::string> Header(const std::string& lower_case_name) const;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual HttpResponse Post(const HttpRequest& request) = 0;
  // The request's body is not sent.
  virtual HttpResponse Get(const HttpRequest& request) = 0;
};

// What a response means for the call: its transport failure, else by status: 2xx ok; 402, a 429
// whose body says the quota is used up, or a refusal that says the credit balance is too low:
// quota exceeded; other 429 rate limited; 401/403 auth; 408 timeout; a 404 whose body names a
// model: unknown model; other 4xx client error; 5xx (and anything else) server error.
CallOutcome OutcomeOf(const HttpResponse& response);

}  // namespace kforge
