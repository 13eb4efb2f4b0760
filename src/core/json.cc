#include "core/json.h"

namespace kforge {

Result<Json> ParseJson(const std::string& text, const std::string& what) {
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::InvalidArgument("malformed JSON in " + what);
  return parsed;
}

const Json& JsonField(const Json& object, const char* key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::optional<double> JsonNumber(const Json& object, const char* key) {
  const Json& value = JsonField(object, key);
  if (!value.is_number()) return std::nullopt;
  return value.get<double>();
}

Json JsonOrNull(const std::optional<double>& value) { return value ? Json(*value) : Json(); }

}  // namespace kforge
