// JSON is nlohmann::json throughout kforge; these helpers read fields without throwing.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace kforge {

using Json = nlohmann::json;

// Parses `text`; a malformed document is an InvalidArgument naming `what`.
Result<Json> ParseJson(const std::string& text, const std::string& what);

// The field's value when present and of type T, otherwise `fallback`.
template <typename T>
T JsonGet(const Json& object, const char* key, T fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const Json::exception&) {
    return fallback;
  }
}

// The member `key` of `object`, or null when `object` is not an object or lacks it. Null
// iterates as empty, so loops over optional arrays and objects need no guard.
const Json& JsonField(const Json& object, const char* key);

// The member `key` of `object` when it is a number, else nullopt (absent, null or mistyped).
std::optional<double> JsonNumber(const Json& object, const char* key);
// The value, or null when absent: how optional numbers are written.
Json JsonOrNull(const std::optional<double>& value);

}  // namespace kforge
