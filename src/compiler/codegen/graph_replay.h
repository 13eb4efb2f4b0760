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

// What the rule in the .cc says of a forward under kAuto: launch directly, replay, or measure both
// (a few launches and cheap copies: a replay pays only when the host, not the GPU, bounds the
// call, which the shape alone does not tell). kMeasure forwards are written with direct launches;
// the caller may evaluate the replayed form too and keep the faster.
enum class ReplayChoice { kDirect, kReplay, kMeasure };
ReplayChoice ChooseReplay(GraphReplay mode, const ForwardShape& shape);

// Whether `mode` replays a forward of `shape` as a graph (kAuto: only where the rule says kReplay).
bool ReplaysAsGraph(GraphReplay mode, const ForwardShape& shape);

// The helper name model writers record in GraphModule::helpers when a forward replays.
inline constexpr const char* kGraphReplayHelper = "KfGraphReplay";

// Writes the KfGraphReplay class (once per file).
void EmitGraphReplayHelper(SourceWriter& out);

}  // namespace kforge::codegen
