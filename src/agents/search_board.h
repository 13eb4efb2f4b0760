// What the writers of one pool share under a search strategy.
// - Greedy: nothing; each writer follows its own line.
// - Beam: the `width` fastest accepted candidates of all writers are kept; before each round a
//   writer continues from the one at its own rank (writer i takes the ((i - 1) mod kept)-th
//   fastest) when that is faster than its own best or it has none.
// - Evolve: a population in islands, one per approach (writer i lives on island (i - 1) mod
//   islands, the approach hints its prompts carry); each island keeps its `width` fastest. A
//   writer's speed-up round mutates its island's fastest, every kExploreEvery-th round the
//   runner-up instead (so that one lucky line does not take over); every kMigrateEvery-th round
//   the fastest of all migrates to an island whose own fastest is slower; and every
//   kRecombineEvery-th round the island's fastest is recombined with another island's fastest
//   (the recombine prompt). Islands keep the search diverse; migration and recombination spread
//   what works.
// Under beam and evolve every writer also sees the distinct ways the others' attempts failed, so
// none repeats them. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/attempt.h"

namespace kforge {

enum class Strategy { kGreedy, kBeam, kEvolve };

const char* ToString(Strategy strategy);
std::optional<Strategy> ParseStrategy(const std::string& text);

// Evolve's rhythm, in a writer's rounds.
inline constexpr int kExploreEvery = 3;
inline constexpr int kMigrateEvery = 2;
inline constexpr int kRecombineEvery = 3;

class SearchBoard {
 public:
  // `islands` matters to evolve only (at least 1).
  SearchBoard(Strategy strategy, int width, int islands = 1);

  Strategy strategy() const { return strategy_; }
  int IslandOf(int writer) const;

  // An accepted candidate, kept when it is among the `width` fastest (of all under beam, of its
  // writer's island under evolve; a timed one outranks an untimed one; equal ones keep their
  // order of arrival).
  void Offer(const AcceptedCandidate& candidate);
  // The candidate writer `writer` continues from in `round`: under beam the kept one at its rank;
  // under evolve its island's parent for the round (a migrant on migration rounds when the
  // fastest of all is on another island and faster). nullopt under greedy or when none.
  std::optional<AcceptedCandidate> StartFor(int writer, int round);
  // Evolve, on recombination rounds: the fastest candidate of another island (the fastest such
  // island first) whose program differs from `parent`'s; nullopt otherwise.
  std::optional<AcceptedCandidate> MateFor(int writer, int round, const AcceptedCandidate& parent) const;
  // Remembers how a failed attempt failed: one entry per distinct verdict, the first message.
  void NoteFailure(const AttemptRecord& attempt);
  // The others' failures as prompt lines ("- writer 2: wrong_output: ..."); "" when none or greedy.
  std::string FailuresSeenBy(int writer) const;
  // Every kept candidate of all islands (fastest first), for the composition's crossover.
  std::vector<AcceptedCandidate> Kept() const;
  // The strategy and what it kept: (writer, round, speedup) fastest first, per island under evolve.
  Json ToJson() const;

 private:
  struct Failure {
    int writer = 0;
    std::string verdict;
    std::string message;
  };
  using Population = std::vector<AcceptedCandidate>;  // fastest first

  // The population a candidate of `writer` joins: one for beam, its island's for evolve.
  int PopulationOf(int writer) const { return strategy_ == Strategy::kEvolve ? IslandOf(writer) : 0; }
  void Insert(Population& population, const AcceptedCandidate& candidate);

  Strategy strategy_;
  size_t width_;
  int islands_;
  mutable std::mutex mutex_;
  std::map<int, Population> kept_;  // by island (beam: island 0); a migrant joins when it is handed over
  std::vector<Failure> failures_;
  int migrations_ = 0;
};

}  // namespace kforge
