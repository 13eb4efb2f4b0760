#include "search/stored_baselines.h"

#include "core/log.h"

namespace kforge {

std::optional<Json> StoredBaselines::Find(const BaselineKey& key) {
  if (store_ == nullptr || !reuse_) return std::nullopt;
  auto stored = store_->GetBaseline(key.Digest());
  if (!stored.ok()) {
    LogInfo("warning: could not read a stored baseline ({}); measuring it again", stored.status().ToString());
    return std::nullopt;
  }
  if (!stored->has_value()) return std::nullopt;
  return **stored;
}

void StoredBaselines::Keep(const BaselineKey& key, const Json& timing) {
  if (store_ == nullptr) return;
  Status kept = store_->RecordBaseline(key.Digest(), key.task_hash, key.mode, timing);
  if (!kept.ok()) LogInfo("warning: could not keep the baseline of {} ({}): {}", key.task_hash, key.mode, kept.ToString());
}

}  // namespace kforge
