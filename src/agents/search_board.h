// What the writers of one pool share under a search strategy. Greedy: nothing (each writer
// follows its own line). Beam: the `width` fastest accepted candidates of all writers are kept;
// before each round a writer continues from the one at its own rank (writer i takes the
// ((i - 1) mod kept)-th fastest), when that is faster than its own best or it has none; and every
// writer sees the distinct ways the others' attempts failed, so none repeats them. Thread-safe.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/attempt.h"

namespace kforge {

enum class Strategy { kGreedy, kBeam };

const char* ToString(Strategy strategy);
std::optional<Strategy> ParseStrategy(const std::string& text);

class SearchBoard {
 public:
  SearchBoard(Strategy strategy, int width);

  Strategy strategy() const { return strategy_; }

  // An accepted candidate, kept when it is among the `width` fastest (a timed one outranks an
  // untimed one; equal ones keep their order of arrival).
  void Offer(const AcceptedCandidate& candidate);
  // The candidate writer `writer` continues from under beam; nullopt under greedy or when none.
  std::optional<AcceptedCandidate> StartFor(int writer) const;
  // Remembers how a failed attempt failed: one entry per distinct verdict, the first message.
  void NoteFailure(const AttemptRecord& attempt);
  // The others' failures as prompt lines ("- writer 2: wrong_output: ..."); "" when none or greedy.
  std::string FailuresSeenBy(int writer) const;
  // The kept candidates' (writer, round, speedup), fastest first.
  Json ToJson() const;

 private:
  struct Failure {
    int writer = 0;
    std::string verdict;
    std::string message;
  };

  Strategy strategy_;
  size_t width_;
  mutable std::mutex mutex_;
  std::vector<AcceptedCandidate> kept_;
  std::vector<Failure> failures_;
};

}  // namespace kforge
