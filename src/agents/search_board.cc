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

bool FasterFirst(const AcceptedCandidate& a, const AcceptedCandidate& b) { return RankTime(a) < RankTime(b); }

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > kMaxMessageChars ? line.substr(0, kMaxMessageChars) + "..." : line;
}

bool Holds(const std::vector<AcceptedCandidate>& population, const AcceptedCandidate& candidate) {
  return std::any_of(population.begin(), population.end(),
                     [&](const AcceptedCandidate& kept) { return kept.source == candidate.source; });
}

Json KeptJson(const std::vector<AcceptedCandidate>& population) {
  Json kept = Json::array();
  for (const AcceptedCandidate& candidate : population) {
    kept.push_back({{"writer", candidate.writer}, {"round", candidate.round}, {"speedup", candidate.speedup()}});
  }
  return kept;
}

}  // namespace

const char* ToString(Strategy strategy) {
  switch (strategy) {
    case Strategy::kGreedy: return "greedy";
    case Strategy::kBeam: return "beam";
    case Strategy::kEvolve: return "evolve";
  }
  return "greedy";
}

std::optional<Strategy> ParseStrategy(const std::string& text) {
  for (Strategy strategy : {Strategy::kGreedy, Strategy::kBeam, Strategy::kEvolve}) {
    if (text == ToString(strategy)) return strategy;
  }
  return std::nullopt;
}

SearchBoard::SearchBoard(Strategy strategy, int width, int islands)
    : strategy_(strategy), width_(std::max(1, width)), islands_(std::max(1, islands)) {}

int SearchBoard::IslandOf(int writer) const { return std::max(0, writer - 1) % islands_; }

void SearchBoard::Insert(Population& population, const AcceptedCandidate& candidate) {
  if (Holds(population, candidate)) return;  // the same program again (an adopted one re-accepted)
  auto at = std::upper_bound(population.begin(), population.end(), candidate, FasterFirst);
  population.insert(at, candidate);
  if (population.size() > width_) population.resize(width_);
}

void SearchBoard::Offer(const AcceptedCandidate& candidate) {
  if (strategy_ == Strategy::kGreedy) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Insert(kept_[PopulationOf(candidate.writer)], candidate);
}

std::optional<AcceptedCandidate> SearchBoard::StartFor(int writer, int round) {
  if (strategy_ == Strategy::kGreedy) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  if (strategy_ == Strategy::kBeam) {
    const Population& kept = kept_[0];
    if (kept.empty()) return std::nullopt;
    return kept[static_cast<size_t>(std::max(0, writer - 1)) % kept.size()];
  }
  Population& island = kept_[IslandOf(writer)];
  if (round % kMigrateEvery == 0) {
    // The fastest of all, when another island holds it, joins this one if it is faster.
    const AcceptedCandidate* fastest = nullptr;
    for (const auto& [id, population] : kept_) {
      if (!population.empty() && (fastest == nullptr || FasterFirst(population.front(), *fastest))) {
        fastest = &population.front();
      }
    }
    if (fastest != nullptr && !Holds(island, *fastest) &&
        (island.empty() || FasterFirst(*fastest, island.front()))) {
      AcceptedCandidate migrant = *fastest;
      Insert(island, migrant);
      ++migrations_;
      return migrant;
    }
  }
  if (island.empty()) return std::nullopt;
  if (round % kExploreEvery == 0 && island.size() > 1) return island[1];
  return island.front();
}

std::optional<AcceptedCandidate> SearchBoard::MateFor(int writer, int round, const AcceptedCandidate& parent) const {
  if (strategy_ != Strategy::kEvolve || round % kRecombineEvery != 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  const AcceptedCandidate* mate = nullptr;
  for (const auto& [id, population] : kept_) {
    if (id == IslandOf(writer)) continue;
    for (const AcceptedCandidate& candidate : population) {
      if (candidate.source == parent.source) continue;
      if (mate == nullptr || FasterFirst(candidate, *mate)) mate = &candidate;
      break;  // an island's fastest other program
    }
  }
  if (mate == nullptr) return std::nullopt;
  return *mate;
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

std::vector<AcceptedCandidate> SearchBoard::Kept() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<AcceptedCandidate> all;
  for (const auto& [id, population] : kept_) {
    for (const AcceptedCandidate& candidate : population) {
      if (!Holds(all, candidate)) all.push_back(candidate);
    }
  }
  std::stable_sort(all.begin(), all.end(), FasterFirst);
  return all;
}

Json SearchBoard::ToJson() const {
  std::vector<AcceptedCandidate> all = Kept();
  std::lock_guard<std::mutex> lock(mutex_);
  Json out = {{"strategy", ToString(strategy_)}, {"width", width_}, {"kept", KeptJson(all)}, {"failures", failures_.size()}};
  if (strategy_ == Strategy::kEvolve) {
    Json islands = Json::array();
    for (const auto& [id, population] : kept_) islands.push_back({{"island", id}, {"kept", KeptJson(population)}});
    out["islands"] = islands;
    out["island_count"] = islands_;
    out["migrations"] = migrations_;
  }
  return out;
}

}  // namespace kforge
