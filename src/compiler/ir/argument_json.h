// Reads one argument of the captured graph JSON ({"int": 3}, {"node": "x", "index": 1},
// {"list": [...]}, ...) into an Argument. Never throws: malformed input is InvalidArgument.
#pragma once

#include <string>

#include "compiler/ir/argument.h"
#include "compiler/ir/graph_builder.h"
#include "core/json.h"

namespace kforge::ir {

// Node references are resolved by name among the values already in `scope`, and their output
// index is checked against the value's output count.
Result<Argument> ArgumentFromJson(const Json& json, const GraphBuilder& scope);

// A JSON number, or one of the strings "inf", "-inf", "nan".
Result<double> FloatFromJson(const Json& json);
// A JSON integer that fits int64.
Result<int64_t> IntFromJson(const Json& json);
// `json` as text for an error message: never throws, cut to a short prefix.
std::string JsonSnippet(const Json& json);

}  // namespace kforge::ir
