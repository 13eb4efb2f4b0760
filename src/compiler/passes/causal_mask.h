// Recognizes a boolean mask over attention scores that is a causal band: computed from aranges
// along the query (i) and key (j) dims of the score plane (the last two dims), it holds exactly
// where j - i <= offset, or exactly where j - i > offset. The attention kernel then skips the key
// blocks past the diagonal instead of loading the mask.
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/ir/graph.h"

namespace kforge::passes {

// The set {(i, j): j - i <= offset} (`lower`), or its complement {(i, j): j - i > offset}.
struct CausalBand {
  int64_t offset = 0;
  bool lower = true;
  bool operator==(const CausalBand&) const = default;
};

// The band `mask` (a bool tensor broadcast over the score plane) is true on, or nullopt when it
// is not provably one: comparisons of aranges (j - i <= 0, i >= j, ...), logical_not, and a
// logical_and with an all-true tensor.
std::optional<CausalBand> FindCausalBand(const ir::Graph& graph, ir::NodeRef mask);

}  // namespace kforge::passes
