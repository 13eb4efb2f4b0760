// A kforge.attention node read once for the kernels that write it (Triton's and the CUDA C++
// one): its operands, attributes and sizes.
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/ir/graph.h"
#include "compiler/passes/attention.h"
#include "core/status.h"

namespace kforge::codegen {

struct AttentionNode {
  const ir::OpNode* node = nullptr;
  ir::NodeRef q, k, v;
  std::optional<ir::NodeRef> bias;
  passes::AttentionAttributes attributes;
  size_t rank = 4;                     // 3 ([batch, T, D]) or 4 ([batch, heads, T, D])
  int64_t batch = 1, heads = 1;        // heads: the second batch dim (1 for rank 3)
  int64_t tq = 0, tk = 0, d = 0, dv = 0;

  int64_t problems() const { return batch * heads; }
};

// The node's reading, or an error for a rank other than 3 or 4.
Result<AttentionNode> ReadAttentionNode(const ir::Graph& graph, const ir::OpNode& node);

}  // namespace kforge::codegen
