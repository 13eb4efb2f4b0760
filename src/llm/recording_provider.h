// Providers that keep what they paid for. RecordingProvider appends every call (request and
// reply) to a cassette as it completes. CachedProvider serves a request from the cassette when a
// recorded OK reply to the same request (by RequestHash) is there and unused, and otherwise calls
// the model and records the call: what resuming an interrupted run uses. Both are thread-safe; a
// failure to write the cassette is logged, and the reply is still returned.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "llm/cassette.h"
#include "llm/provider.h"

namespace kforge {

class RecordingProvider : public Provider {
 public:
  // IoError when the cassette cannot be opened for appending.
  static Result<std::unique_ptr<RecordingProvider>> Open(const std::filesystem::path& cassette,
                                                         std::unique_ptr<Provider> inner);
  // `writer` may be shared by several providers (one cassette for the models of every role).
  RecordingProvider(std::shared_ptr<CassetteWriter> writer, std::unique_ptr<Provider> inner);

  // Calls the inner provider with the request's model filled in from its default, and records.
  Completion Complete(const CompletionRequest& request) override;
  std::string name() const override { return inner_->name(); }
  std::string default_model() const override { return inner_->default_model(); }
  ProviderCheck Check() override { return inner_->Check(); }

 private:
  std::shared_ptr<CassetteWriter> writer_;
  std::unique_ptr<Provider> inner_;
};

class CachedProvider : public Provider {
 public:
  // A missing cassette is an empty one; InvalidArgument naming the line of a malformed one.
  static Result<std::unique_ptr<CachedProvider>> Open(const std::filesystem::path& cassette,
                                                      std::unique_ptr<Provider> inner);

  Completion Complete(const CompletionRequest& request) override;
  std::string name() const override { return recorder_->name(); }
  std::string default_model() const override { return recorder_->default_model(); }
  ProviderCheck Check() override { return recorder_->Check(); }
  // How many calls were answered from the cassette.
  int64_t served_from_cassette() const { return served_.load(); }

 private:
  CachedProvider(std::vector<CassetteEntry> entries, std::unique_ptr<RecordingProvider> recorder)
      : entries_(std::move(entries)), recorder_(std::move(recorder)) {}

  CassetteEntries entries_;
  std::unique_ptr<RecordingProvider> recorder_;
  std::atomic<int64_t> served_{0};
};

}  // namespace kforge
