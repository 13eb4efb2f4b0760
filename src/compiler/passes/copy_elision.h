// Copies a kernel can do without, which the captured program makes to hand a library call a
// contiguous tensor:
// - A batched product whose operand is a contiguous copy of a strided value, flattened
//   (`bmm(view(clone(x)))`, what einsum's lowering writes before every bmm), reads x through its
//   strides instead: x is viewed as [batch..., rows, cols] (its batch dims kept apart where they
//   do not merge) and the product becomes a matmul over those batch dims, viewed back as the bmm's
//   result.
// - A pointwise result whose only reader copies it to contiguous is written contiguous in the
//   first place, and the copy is dropped.
// - A product whose result views carry to one pointwise op that would read it across its rows
//   (one element per row) is stored column-major, and the views between are retyped to match.
// - An attention result that permutes carry to one contiguous copy (multi-head attention's
//   `y.transpose(1, 2).contiguous()`) is stored in the copy's layout, and the copy is dropped.
// Each rewrite applies only where the copy has no other reader, so no data moves twice.
#pragma once

#include <optional>
#include <vector>

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

Result<ir::Graph> ElideCopies(const ir::Graph& graph);

// PyTorch's strides for viewing a tensor of `shape` and `stride` as `target` (its view rule), or
// nullopt when no view exists.
std::optional<std::vector<int64_t>> ViewStrides(const ir::Shape& shape, const std::vector<int64_t>& stride,
                                                const ir::Shape& target);

// The type the metadata op `view` (view, _unsafe_view, reshape, permute or unsqueeze) gives an
// input of type `input`, where the captured program gave it another layout (its own output type
// is what it gave that one); nullopt for another op or where no view exists.
std::optional<ir::TensorType> Reviewed(const ir::OpNode& view, const ir::TensorType& input);

}  // namespace kforge::passes
