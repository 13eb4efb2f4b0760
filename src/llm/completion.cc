#include "llm/completion.h"

namespace kforge {
namespace {

constexpr CallOutcome kAllOutcomes[] = {
    CallOutcome::kOk,           CallOutcome::kRateLimited,    CallOutcome::kServerError,
    CallOutcome::kClientError,  CallOutcome::kAuthError,      CallOutcome::kTimeout,
    CallOutcome::kNetworkError, CallOutcome::kMalformedReply, CallOutcome::kEmptyReply,
    CallOutcome::kTruncatedReply, CallOutcome::kNoRecording,  CallOutcome::kCommandFailed,
    CallOutcome::kQuotaExceeded, CallOutcome::kUnknownModel, CallOutcome::kPromptTooLong,
};

}  // namespace

const char* ToString(CallOutcome outcome) {
  switch (outcome) {
    case CallOutcome::kOk: return "ok";
    case CallOutcome::kRateLimited: return "rate_limited";
    case CallOutcome::kServerError: return "server_error";
    case CallOutcome::kClientError: return "client_error";
    case CallOutcome::kAuthError: return "auth_error";
    case CallOutcome::kQuotaExceeded: return "quota_exceeded";
    case CallOutcome::kUnknownModel: return "unknown_model";
    case CallOutcome::kPromptTooLong: return "prompt_too_long";
    case CallOutcome::kTimeout: return "timeout";
    case CallOutcome::kNetworkError: return "network_error";
    case CallOutcome::kMalformedReply: return "malformed_reply";
    case CallOutcome::kEmptyReply: return "empty_reply";
    case CallOutcome::kTruncatedReply: return "truncated_reply";
    case CallOutcome::kNoRecording: return "no_recording";
    case CallOutcome::kCommandFailed: return "command_failed";
  }
  return "unknown";
}

Result<CallOutcome> ParseCallOutcome(const std::string& text) {
  for (CallOutcome outcome : kAllOutcomes) {
    if (text == ToString(outcome)) return outcome;
  }
  std::string known;
  for (CallOutcome outcome : kAllOutcomes) known += std::string(known.empty() ? "" : ", ") + ToString(outcome);
  return Status::InvalidArgument("unknown call outcome '" + text + "'; expected one of " + known);
}

bool IsFatal(CallOutcome outcome) {
  switch (outcome) {
    case CallOutcome::kClientError:
    case CallOutcome::kAuthError:
    case CallOutcome::kQuotaExceeded:
    case CallOutcome::kUnknownModel:
    case CallOutcome::kNoRecording:
      return true;
    default:
      return false;
  }
}

Completion FailedCompletion(CallOutcome outcome, std::string error) {
  Completion completion;
  completion.outcome = outcome;
  completion.error = std::move(error);
  return completion;
}

void ClassifyReplyText(Completion& completion, bool hit_token_limit) {
  if (hit_token_limit) {
    completion.outcome = CallOutcome::kTruncatedReply;
    completion.error = "the reply stopped at the max_tokens limit; raise max_tokens or ask for a shorter answer";
  } else if (completion.text.find_first_not_of(" \t\r\n") == std::string::npos) {
    completion.outcome = CallOutcome::kEmptyReply;
    completion.error = "the model returned no text" +
                       (completion.finish_reason.empty() ? "" : " (it stopped with \"" + completion.finish_reason + "\")");
  } else {
    completion.outcome = CallOutcome::kOk;
    completion.error.clear();
  }
}

}  // namespace kforge
