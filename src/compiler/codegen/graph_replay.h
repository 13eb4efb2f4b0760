// A generated ModelNew's forward replayed as one CUDA graph: the Python helper the file carries,
// and the rule that decides when a forward is worth it.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/codegen/source_writer.h"

namespace kforge::codegen {

// When the generated forward replays as a CUDA graph.
enum class GraphReplay { kAuto, kAlways, kNever };

// "auto", "always", "never"; nullopt-like failure as false.
bool ParseGraphReplay(const std::string& text, GraphReplay& out);
const char* ToString(GraphReplay mode);

// What the rule looks at: the forward's launches (kernels and library calls) and the bytes a
// replay copies (inputs in, outputs out).
struct ForwardShape {
  int launches = 0;
  int64_t copy_bytes = 0;
};

// Whether `mode` (kAuto: by the measured rule in the .cc) replays a forward of `shape` as a graph.
bool ReplaysAsGraph(GraphReplay mode, const ForwardShape& shape);

// The helper name model writers record in GraphModule::helpers when a forward replays.
inline constexpr const char* kGraphReplayHelper = "KfGraphReplay";

// Writes the KfGraphReplay class (once per file).
void EmitGraphReplayHelper(SourceWriter& out);

}  // namespace kforge::codegen
