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

// Reads the keys of a reply another process wrote (a worker's, the zygote's) once, at the
// boundary, into types: a key renamed or missing on the writer's side is an error naming it
// (Internal: the evaluation's infra_error), never a check that silently reads a default.
class JsonReader {
 public:
  // `where` names the object in errors ("the zygote's report").
  JsonReader(const Json& object, std::string where) : object_(object), where_(std::move(where)) {}

  // The key's value as T, where null means "absent"; a missing key or a value of another type is
  // an error naming it.
  template <typename T>
  Result<std::optional<T>> Optional(const char* key) const {
    if (!object_.is_object() || !object_.contains(key)) return Status::Internal(where_ + " lacks '" + key + "'");
    const Json& value = object_[key];
    if (value.is_null()) return std::optional<T>();
    try {
      return std::optional<T>(value.get<T>());
    } catch (const Json::exception&) {
      return Status::Internal(where_ + ": '" + key + "' has the wrong type (" + value.dump().substr(0, 80) + ")");
    }
  }

  // The same, and null is an error too.
  template <typename T>
  Result<T> Required(const char* key) const {
    ASSIGN_OR_RETURN(std::optional<T> value, Optional<T>(key));
    if (!value) return Status::Internal(where_ + ": '" + key + "' is null");
    return *value;
  }

  // The same, for a value that must be a list (an array) or an object.
  Result<Json> List(const char* key) const { return Kind(key, &Json::is_array, "a list"); }
  Result<Json> Object(const char* key) const { return Kind(key, &Json::is_object, "an object"); }

  // A key the writer may leave out (older reports, optional facts): null when absent.
  Json Loose(const char* key) const { return object_.is_object() && object_.contains(key) ? object_[key] : Json(); }

 private:
  Result<Json> Kind(const char* key, bool (Json::*is)() const noexcept, const char* kind) const {
    ASSIGN_OR_RETURN(Json value, Required<Json>(key));
    if (!(value.*is)()) return Status::Internal(where_ + ": '" + key + "' is not " + kind);
    return value;
  }

  const Json& object_;
  std::string where_;
};

}  // namespace kforge
