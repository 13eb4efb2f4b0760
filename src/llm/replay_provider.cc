#include "llm/replay_provider.h"

namespace kforge {
namespace {

constexpr size_t kQuoteLimit = 200;

std::string Excerpt(const std::string& text) {
  return text.size() <= kQuoteLimit ? text : text.substr(0, kQuoteLimit) + "...";
}

}  // namespace

Result<std::unique_ptr<ReplayProvider>> ReplayProvider::Open(const std::filesystem::path& cassette) {
  ASSIGN_OR_RETURN(std::vector<CassetteEntry> entries, LoadCassette(cassette));
  return std::make_unique<ReplayProvider>(cassette.string(), std::move(entries));
}

ReplayProvider::ReplayProvider(std::string cassette_name, std::vector<CassetteEntry> entries)
    : cassette_name_(std::move(cassette_name)), entries_(std::move(entries)) {}

Completion ReplayProvider::Complete(const CompletionRequest& request) {
  if (std::optional<CassetteEntry> entry = entries_.Take(request)) return ReplayedCompletion(*entry, request);
  Completion miss = FailedCompletion(
      CallOutcome::kNoRecording,
      "no unused call in cassette " + cassette_name_ + " matches this request (last user message: \"" +
          Excerpt(LastUserMessage(request.messages)) +
          "\"); record the run again, or add a line with a \"match\" that this request satisfies");
  miss.model = request.model;
  return miss;
}

Completion ReplayedCompletion(const CassetteEntry& entry, const CompletionRequest& request) {
  Completion completion = entry.reply;
  completion.model = entry.model.empty() ? request.model : entry.model;
  completion.attempts = 0;
  completion.latency_s = 0;
  completion.cost_usd = 0;
  completion.cost_known = true;
  return completion;
}

}  // namespace kforge
