#include "agents/search_board.h"

#include <fmt/format.h>

#include <algorithm>

namespace kforge {
namespace {

constexpr size_t kMaxFailures = 8;
constexpr size_t kMaxMessageChars = 240;

// The time a kept candidate is ranked by: its median, or infinity when it was not timed.
double RankTime(const AcceptedCandidate& candidate) {
  if (!candidate.evaluation.timings_meaningful || !candidate.evaluation.candidate_ms) return 1e300;
  return candidate.evaluation.candidate_ms->median;
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > kMaxMessageChars ? line.substr(0, kMaxMessageChars) + "..." : line;
}

}  // namespace

const char* ToString(Strategy strategy) { return strategy == Strategy::kBeam ? "beam" : "greedy"; }

std::optional<Strategy> ParseStrategy(const std::string& text) {
  if (text == "greedy") return Strategy::kGreedy;
  if (text == "beam") return Strategy::kBeam;
  return std::nullopt;
}

SearchBoard::SearchBoard(Strategy strategy, int width) : strategy_(strategy), width_(std::max(1, width)) {}

void SearchBoard::Offer(const AcceptedCandidate& candidate) {
  if (strategy_ == Strategy::kGreedy) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const AcceptedCandidate& kept : kept_) {
    if (kept.source == candidate.source) return;  // the same program again (an adopted one re-accepted)
  }
  auto at = std::upper_bound(kept_.begin(), kept_.end(), candidate, [](const AcceptedCandidate& a, const AcceptedCandidate& b) {
    return RankTime(a) < RankTime(b);
  });
  kept_.insert(at, candidate);
  if (kept_.size() > width_) kept_.resize(width_);
}

std::optional<AcceptedCandidate> SearchBoard::StartFor(int writer) const {
  if (strategy_ == Strategy::kGreedy) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  if (kept_.empty()) return std::nullopt;
  return kept_[static_cast<size_t>(std::max(0, writer - 1)) % kept_.size()];
}

void SearchBoard::NoteFailure(const AttemptRecord& attempt) {
  if (strategy_ == Strategy::kGreedy || attempt.accepted() || attempt.verdict.empty()) return;
  if (attempt.outcome == AttemptOutcome::kCallFailed || attempt.outcome == AttemptOutcome::kJudgeFailed) return;
  if (attempt.verdict_kind == VerdictKind::kInfraError) return;  // kforge's failure, not the program's
  std::lock_guard<std::mutex> lock(mutex_);
  if (failures_.size() >= kMaxFailures) return;
  for (const Failure& failure : failures_) {
    if (failure.verdict == attempt.verdict) return;
  }
  failures_.push_back({attempt.writer, attempt.verdict, FirstLine(attempt.message)});
}

std::string SearchBoard::FailuresSeenBy(int writer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const Failure& failure : failures_) {
    if (failure.writer == writer) continue;
    out += fmt::format("- writer {}: {}{}{}\n", failure.writer, failure.verdict, failure.message.empty() ? "" : ": ",
                       failure.message);
  }
  return out;
}

Json SearchBoard::ToJson() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Json kept = Json::array();
  for (const AcceptedCandidate& candidate : kept_) {
    kept.push_back({{"writer", candidate.writer}, {"round", candidate.round}, {"speedup", candidate.speedup()}});
  }
  return {{"strategy", ToString(strategy_)}, {"width", width_}, {"kept", kept}, {"failures", failures_.size()}};
}

}  // namespace kforge
