#include "compiler/ir/partial_capture.h"

#include <string_view>
#include <utility>

#include "compiler/ir/import_graph.h"

namespace kforge::ir {
namespace {

Result<std::string> StringField(const Json& object, const char* key) {
  const Json& field = JsonField(object, key);
  if (!field.is_string()) return Status::InvalidArgument(std::string("\"") + key + "\" must be a string");
  return field.get<std::string>();
}

Result<const Json*> ArrayField(const Json& object, const char* key) {
  const Json& field = JsonField(object, key);
  if (!field.is_array()) return Status::InvalidArgument(std::string("\"") + key + "\" must be an array");
  return &field;
}

// "layers.0": names joined by dots, none empty.
bool IsQualifiedName(std::string_view name) {
  return !name.empty() && name.front() != '.' && name.back() != '.' && name.find("..") == std::string_view::npos;
}

Result<CapturedSubmodule> ImportSubmodule(const Json& entry) {
  const Json& field = JsonField(entry, "name");
  if (!field.is_string() || !IsQualifiedName(field.get_ref<const std::string&>())) {
    return Status::InvalidArgument(field.dump() + " is not a submodule's qualified name");
  }
  std::string name = field.get<std::string>();
  Result<Graph> graph = ImportGraph(JsonField(entry, "graph"));
  if (!graph.ok()) return graph.status().WithContext("submodule " + name);
  return CapturedSubmodule{std::move(name), std::move(graph).value()};
}

Result<KeptSubmodule> ImportKept(const Json& entry) {
  ASSIGN_OR_RETURN(std::string name, StringField(entry, "name"));
  ASSIGN_OR_RETURN(std::string reason, StringField(entry, "reason"));
  return KeptSubmodule{std::move(name), std::move(reason)};
}

}  // namespace

bool IsPartialCapture(const Json& document) { return JsonGet<std::string>(document, "format", "") == kPartialCaptureFormat; }

Result<PartialCapture> ImportPartialCapture(const Json& document) {
  if (!IsPartialCapture(document)) return Status::InvalidArgument(std::string("\"format\" must be ") + kPartialCaptureFormat);
  PartialCapture capture;
  ASSIGN_OR_RETURN(capture.rest.export_error, StringField(document, "export_error"));
  ASSIGN_OR_RETURN(const Json* submodules, ArrayField(document, "submodules"));
  for (const Json& entry : *submodules) {
    ASSIGN_OR_RETURN(CapturedSubmodule submodule, ImportSubmodule(entry));
    capture.submodules.push_back(std::move(submodule));
  }
  ASSIGN_OR_RETURN(const Json* kept, ArrayField(document, "kept"));
  for (const Json& entry : *kept) {
    ASSIGN_OR_RETURN(KeptSubmodule kept_submodule, ImportKept(entry));
    capture.rest.kept.push_back(std::move(kept_submodule));
  }
  const Json& forward = JsonField(document, "forward");
  ASSIGN_OR_RETURN(capture.rest.forward_source, StringField(forward, "source"));
  ASSIGN_OR_RETURN(capture.rest.forward_class, StringField(forward, "class"));
  return capture;
}

}  // namespace kforge::ir
