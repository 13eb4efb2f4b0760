#include "llm/http_transport.h"

#include <algorithm>
#include <cctype>

namespace kforge {

std::optional<std::string> HttpResponse::Header(const std::string& lower_case_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_case_name) return value;
  }
  return std::nullopt;
}

namespace {

bool Mentions(const std::string& body, const char* words) {
  std::string lower = body.substr(0, 4096);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find(words) != std::string::npos;
}

}  // namespace

CallOutcome OutcomeOf(const HttpResponse& response) {
  if (response.transport_failure != CallOutcome::kOk) return response.transport_failure;
  int status = response.status;
  if (status >= 200 && status < 300) return CallOutcome::kOk;
  // OpenAI says "insufficient_quota" with a 429, Anthropic "credit balance is too low" with a 400,
  // gateways answer 402 Payment Required: no retry will cure any of them.
  if (status == 402 || (status == 429 && Mentions(response.body, "insufficient_quota")) ||
      (status >= 400 && status < 500 && Mentions(response.body, "credit balance"))) {
    return CallOutcome::kQuotaExceeded;
  }
  if (status == 429) return CallOutcome::kRateLimited;
  if (status == 404 && Mentions(response.body, "model")) return CallOutcome::kUnknownModel;
  if (status == 401 || status == 403) return CallOutcome::kAuthError;
  if (status == 408) return CallOutcome::kTimeout;
  if (status >= 400 && status < 500) return CallOutcome::kClientError;
  return CallOutcome::kServerError;
}

}  // namespace kforge
