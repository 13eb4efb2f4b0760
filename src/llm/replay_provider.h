// A provider that answers from a cassette instead of a model (`replay:PATH`): each request gets
// the first unused matching entry (see CassetteEntries::Take), and a request with none gets a
// kNoRecording Completion naming the cassette and the request. Costs nothing. Thread-safe.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "llm/cassette.h"
#include "llm/provider.h"

namespace kforge {

class ReplayProvider : public Provider {
 public:
  // NotFound for a missing cassette, InvalidArgument naming the line of a malformed one.
  static Result<std::unique_ptr<ReplayProvider>> Open(const std::filesystem::path& cassette);
  // `cassette_name` is what a miss names.
  ReplayProvider(std::string cassette_name, std::vector<CassetteEntry> entries);

  Completion Complete(const CompletionRequest& request) override;
  std::string name() const override { return "replay"; }
  // Entries not served yet.
  size_t unused() const { return entries_.unused(); }

 private:
  const std::string cassette_name_;
  CassetteEntries entries_;
};

// A Completion served from a cassette entry: its reply as recorded, with no attempts, no latency
// and no cost (nothing was paid for it now).
Completion ReplayedCompletion(const CassetteEntry& entry, const CompletionRequest& request);

}  // namespace kforge
