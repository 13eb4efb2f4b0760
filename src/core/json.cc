#include "core/json.h"

namespace kforge {

Result<Json> ParseJson(const std::string& text, const std::string& what) {
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::InvalidArgument("malformed JSON in " + what);
  return parsed;
}

}  // namespace kforge
