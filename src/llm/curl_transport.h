// The real HttpTransport, over libcurl: a fresh easy handle per call (so calls on many threads
// share nothing), a whole-call timeout, no signals, and the reply's headers captured. Timeouts
// come back as kTimeout and failures to connect, send or receive as kNetworkError. Thread-safe.
#pragma once

#include <cstddef>

#include "llm/http_transport.h"

namespace kforge {

class CurlTransport : public HttpTransport {
 public:
  // Replies larger than `max_body_bytes` are cut off and reported as a network error.
  explicit CurlTransport(size_t max_body_bytes = 64 << 20);
  HttpResponse Post(const HttpRequest& request) override;
  HttpResponse Get(const HttpRequest& request) override;

 private:
  HttpResponse Perform(const HttpRequest& request, bool post);

  size_t max_body_bytes_;
};

}  // namespace kforge
