#include "eval/baseline_source.h"

#include "core/hash.h"

namespace kforge {

std::string BaselineKey::Digest() const {
  Json fields = {{"task", task_hash}, {"environment", environment}, {"precision", precision}, {"mode", mode},
                 {"budget", budget}};
  return Sha256Hex(fields.dump());  // object keys are sorted: the same fields, the same text
}

}  // namespace kforge
