// Imports the graph JSON the worker captures with torch.export ("kforge-graph-1") into an IR
// Graph, the optional "mutations" section (the buffers forward() updates) included. Everything is
// validated (format, names, references, output indices, mutation targets, dtypes, shapes,
// strides, then VerifyGraph); malformed input is InvalidArgument naming the value and field. It
// never throws.
#pragma once

#include <string>

#include "compiler/ir/graph.h"
#include "core/json.h"

namespace kforge::ir {

inline constexpr const char* kGraphFormat = "kforge-graph-1";

Result<Graph> ImportGraph(const Json& document);
// Parses `text` first; `what` names it in a parse error (a file path).
Result<Graph> ImportGraphText(const std::string& text, const std::string& what);

}  // namespace kforge::ir
