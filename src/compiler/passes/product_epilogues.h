// Pointwise consumers that read a product through views, moved into the product's own index space
// so that the product's kernel computes them as its epilogue. The fusion planner joins a pointwise
// op to a product only when it reads the product directly, over the product's shape; einsum's
// lowering puts views between them (Mamba2: `bmm` viewed and permuted, then multiplied by a
// decay mask, then permuted and flattened again for the next product), so the product stored a
// tensor that a pointwise kernel read back, once per consumer.
//
// For a pointwise op P reading X = views(A), where A (the anchor) is a matmul M, a pointwise op
// over M's shape that reads M, or an op this pass already moved into M's shape, and X holds each
// element of A once:
// - The positions of M's and X's dims in M's memory are cut into the coarsest pieces both agree
//   on (each piece lies inside one dim of M and one dim of X).
// - M's batch dims are split into those pieces where P's other inputs or its output need it (the
//   matrix dims are never split); the product becomes a matmul over the split batch dims, its
//   operands viewed alike (a split is always a view). Only where A is M and nothing else reads M
//   or the views; otherwise A is read over its own shape.
// - P is computed on that product directly (P_R, the product's shape), its other inputs viewed
//   into the same shape (expanded to X's shape, split into pieces, permuted, merged), its output
//   stored with P's own strides; P's result is a view of P_R again.
// - An input of P that is an op already moved, viewing its anchor the way X does, is read as the
//   moved op itself (a GELU written out: every op of it runs in the product's epilogue).
// It applies only where P_R's stores run along a matrix dim (stride 1 along its rows or columns),
// not where another input of P is computed from M by another kernel (a norm's statistics of the
// moved op): P could not join M's kernel, and moving it would only split it from its neighbours;
// and not where a reduction reads P (the squares of a norm) while P's inputs are stored anyway:
// the reduction's kernel computes P as it folds, where moved P would be stored for it.
#pragma once

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

Result<ir::Graph> MoveEpiloguesIntoProducts(const ir::Graph& graph);

}  // namespace kforge::passes
