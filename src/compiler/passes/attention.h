// Scaled dot-product attention as one node: the subgraph
//   bmm(q, k^T) -> scale -> + bias / masked fills -> _softmax(-1) -> bmm(., v)
// as eager code (minGPT's explicit form), F.scaled_dot_product_attention's decomposition (the
// scale split over q and k, an additive or boolean mask, a causal mask from aranges, and its
// fix-up that zeroes rows with every score masked) and their variants write it, becomes
//   kforge.attention.default(q, k, v, bias, scale=s, causal=offset|None, empty_rows="nan"|"zero")
// q [..., Tq, D], k [..., Tk, D] and v [..., Tk, Dv] are read where they are (permutes of a
// projection's split, through their strides): the copies that fed the bmms go. `bias` (or None)
// broadcasts to the scores [..., Tq, Tk] and is the sum of the additive terms, a -inf fill
// becoming where(mask, -inf, 0); its producers stay in the graph for the attention kernel to
// recompute per tile. A fill that is a causal band from aranges becomes `causal`: key j is
// kept for query i when j - i <= offset. `empty_rows` says what a row whose every score is -inf
// gives: NaN as softmax does, or zeros as SDPA's fix-up does. Runs before decompose, which would
// split the softmax.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

// A kforge.attention node's keyword arguments, read and written only here.
struct AttentionAttributes {
  double scale = 1.0;    // multiplies the scores q @ k^T
  // Multiplies q before the product, where the source scaled its operands (multi-head attention
  // scales q): each element rounded as the source rounds it, so that scores of order 1e5 (inputs
  // scaled by 1000) round alike and the softmax sees the same values.
  double q_scale = 1.0;
  std::optional<int64_t> causal;  // key j kept for query i when j - i <= *causal
  bool zero_empty_rows = false;   // a row whose every score is -inf gives zeros (else NaN)

  std::vector<ir::NamedArgument> ToKwargs() const;
  static AttentionAttributes Of(const ir::OpNode& node);
};

Result<ir::Graph> FuseAttention(const ir::Graph& graph);

}  // namespace kforge::passes
