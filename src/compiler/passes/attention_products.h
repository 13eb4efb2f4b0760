// A projection whose output is split into attention's operands, as minGPT's
//   qkv = addmm(bias, x, W^T).view(B, T, 3C);  q, k, v = qkv.split(C, dim=2)
// becomes one product per run of consecutive chunks that attention reads in the same role (q or k,
// whose rounding reaches the scores; v, whose rounding reaches only the output; neither), each of
// the weight's columns and the bias's elements of its run, so that the products feeding the scores
// can run at a precision of their own (KernelOptions::attention_input_dot_precision) while v's
// does not pay for it. Every output is still one product over the same K elements of x and the
// weight; the views that carried the chunks to attention are retyped to the new layouts.
// Applies where the product (addmm of a 1-D bias, or mm; 2-D) is read only through a view that
// keeps its last dim and a split_with_sizes along that dim, the chunks reach attention through
// views the retyping handles (view, reshape, permute, unsqueeze), and there are at least one
// score run and one value run.
#pragma once

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

Result<ir::Graph> SplitAttentionProducts(const ir::Graph& graph);

}  // namespace kforge::passes
