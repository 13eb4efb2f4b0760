// The reference's timings kept in the workspace's store, reused by later evaluations on the same
// machine unless the user asks for fresh ones (the evaluation's evidence says which it got).
// Thread-safe as the Store is.
#pragma once

#include "eval/baseline_source.h"
#include "store/store.h"

namespace kforge {

class StoredBaselines : public BaselineSource {
 public:
  // `store` may be null (no store: nothing is kept or found); with `reuse` false every baseline is
  // measured again and the new one replaces the stored one.
  StoredBaselines(Store* store, bool reuse) : store_(store), reuse_(reuse) {}

  std::optional<Json> Find(const BaselineKey& key) override;
  void Keep(const BaselineKey& key, const Json& timing) override;

 private:
  Store* store_;
  bool reuse_;
};

}  // namespace kforge
