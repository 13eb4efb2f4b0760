#include "llm/http_transport.h"

namespace kforge {

std::optional<std::string> HttpResponse::Header(const std::string& lower_case_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_case_name) return value;
  }
  return std::nullopt;
}

CallOutcome OutcomeOf(const HttpResponse& response) {
  if (response.transport_failure != CallOutcome::kOk) return response.transport_failure;
  int status = response.status;
  if (status >= 200 && status < 300) return CallOutcome::kOk;
  if (status == 429) return CallOutcome::kRateLimited;
  if (status == 401 || status == 403) return CallOutcome::kAuthError;
  if (status == 408) return CallOutcome::kTimeout;
  if (status >= 400 && status < 500) return CallOutcome::kClientError;
  return CallOutcome::kServerError;
}

}  // namespace kforge
