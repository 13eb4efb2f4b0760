#include "llm/recording_provider.h"

#include "core/log.h"
#include "llm/replay_provider.h"

namespace kforge {

Result<std::unique_ptr<RecordingProvider>> RecordingProvider::Open(const std::filesystem::path& cassette,
                                                                   std::unique_ptr<Provider> inner) {
  ASSIGN_OR_RETURN(std::unique_ptr<CassetteWriter> writer, CassetteWriter::Open(cassette));
  return std::make_unique<RecordingProvider>(std::move(writer), std::move(inner));
}

RecordingProvider::RecordingProvider(std::shared_ptr<CassetteWriter> writer, std::unique_ptr<Provider> inner)
    : writer_(std::move(writer)), inner_(std::move(inner)) {}

Completion RecordingProvider::Complete(const CompletionRequest& original) {
  CompletionRequest request = WithDefaultModel(original, inner_->default_model());
  Completion completion = inner_->Complete(request);
  Status recorded = writer_->Append(request, completion);
  if (!recorded.ok()) LogInfo("warning: this LLM call was not recorded: {}", recorded.message());
  return completion;
}

Result<std::unique_ptr<CachedProvider>> CachedProvider::Open(const std::filesystem::path& cassette,
                                                             std::unique_ptr<Provider> inner) {
  std::vector<CassetteEntry> entries;
  if (std::filesystem::exists(cassette)) {
    ASSIGN_OR_RETURN(entries, LoadCassette(cassette));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RecordingProvider> recorder, RecordingProvider::Open(cassette, std::move(inner)));
  return std::unique_ptr<CachedProvider>(new CachedProvider(std::move(entries), std::move(recorder)));
}

Completion CachedProvider::Complete(const CompletionRequest& original) {
  CompletionRequest request = WithDefaultModel(original, recorder_->default_model());
  if (std::optional<CassetteEntry> entry = entries_.Take(request, /*recorded_ok_only=*/true)) {
    ++served_;
    return ReplayedCompletion(*entry, request);
  }
  return recorder_->Complete(request);
}

}  // namespace kforge
