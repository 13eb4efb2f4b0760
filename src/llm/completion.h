// What a language model call gave back. A failed call is a Completion with a non-OK outcome and
// words in `error` a user can act on; it is never an exception and never a substitute reply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace kforge {

enum class CallOutcome {
  kOk,
  kRateLimited,     // HTTP 429 after every allowed attempt
  kServerError,     // HTTP 5xx after every allowed attempt
  kClientError,     // HTTP 4xx other than 401/403/429: the request itself is wrong
  kAuthError,       // HTTP 401/403: missing, wrong or unauthorized key
  kQuotaExceeded,   // out of credit or quota (HTTP 402, or a 429/400 that says so)
  kUnknownModel,    // HTTP 404 naming the model: the server does not serve it
  kPromptTooLong,   // not sent: the prompt leaves no room for a reply in the model's context
  kTimeout,         // no complete reply within the timeout
  kNetworkError,    // could not connect, or the connection broke
  kMalformedReply,  // the body is not the API's documented JSON
  kEmptyReply,      // a well-formed reply with no text
  kTruncatedReply,  // the reply stopped at the token limit; `text` holds the partial reply
  kNoRecording,     // a replay found no recorded call for the request
  kCommandFailed,   // a command provider's program failed
};

// The status string the store keeps: "ok", "rate_limited", "server_error", ...
const char* ToString(CallOutcome outcome);
// The inverse of ToString; anything else is InvalidArgument.
Result<CallOutcome> ParseCallOutcome(const std::string& text);

// One HTTP attempt of a call, as it went.
struct CallAttempt {
  int http_status = 0;  // 0 when no reply came
  CallOutcome outcome = CallOutcome::kOk;
  double seconds = 0;    // the attempt itself
  double waited_s = 0;   // the backoff (or Retry-After) slept after it; 0 for the last
  bool maybe_billed = false;  // no reply, but the request was sent: a provider may bill what it generated
  std::string error;     // the transport's words when no reply came
};

struct Completion {
  CallOutcome outcome = CallOutcome::kOk;
  std::string error;  // empty when ok; never contains an API key
  std::string text;
  std::string model;  // the model asked (the request's, or the provider's default)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cache_read_tokens = 0;   // of prompt_tokens, read from the provider's prompt cache
  int64_t cache_write_tokens = 0;  // of prompt_tokens, written to it
  double cost_usd = 0;
  bool cost_known = true;  // false when tokens were spent at no configured price (cost_usd is 0)
  double latency_s = 0;    // wall time of the whole call, retries included
  int attempts = 0;
  int max_tokens = 0;         // the output limit sent (0 when nothing was sent)
  std::vector<CallAttempt> attempt_log;  // every HTTP attempt (hosted APIs only)
  // What attempts without a usage report (timed out, cut off) may have been billed: an estimate,
  // at most the prompt plus the output limit per such attempt, priced like the call.
  int64_t estimated_tokens = 0;
  double estimated_cost_usd = 0;
  std::string finish_reason;  // as the API said it ("stop", "length", "end_turn", "max_tokens")

  bool ok() const { return outcome == CallOutcome::kOk; }
};

// True for failures that every later call would repeat: a refused key, an exhausted quota, an
// unknown model, a request the server refuses, a replay with no recording. The LLM stage ends at
// the first instead of paying for more calls.
bool IsFatal(CallOutcome outcome);

// A failed Completion with `outcome` and `error`.
Completion FailedCompletion(CallOutcome outcome, std::string error);

// Gives a parsed reply its outcome: kTruncatedReply when it `hit_token_limit` (the partial text is
// kept), else kEmptyReply when its text is blank, else kOk.
void ClassifyReplyText(Completion& completion, bool hit_token_limit);

}  // namespace kforge
