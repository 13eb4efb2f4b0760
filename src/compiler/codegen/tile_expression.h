// Computes values of a graph at a 2-D tile of indices inside a kernel, recomputing them from the
// tensors they are made of instead of reading them from memory: the attention kernel's bias at
// each (query block, key block) tile, with the views, index arithmetic on aranges and gathers
// (a relative-position bias table indexed by a buffer or by clamped differences of positions)
// that produce it. An index is kept as mixed-radix digits, so reshapes that only split or merge
// dims need no division.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/source_writer.h"
#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::codegen {

// Which of the tile's two axes an expression varies along: its shape is [BLOCK_M, BLOCK_N],
// [BLOCK_M, 1], [1, BLOCK_N], or a scalar per program.
struct TileAxes {
  bool rows = false, columns = false;
  TileAxes operator|(const TileAxes& other) const { return {rows || other.rows, columns || other.columns}; }
};

// One digit of an index: an expression with values in [0, extent).
struct IndexDigit {
  std::string expr;
  int64_t extent = 1;
  TileAxes axes;
};
// One dim's index, most significant digit first: sum of digit_k * (the extents after it).
using DimIndex = std::vector<IndexDigit>;
// A value's index, one per dim.
using TileIndex = std::vector<DimIndex>;

// A value computed at a tile: the variable holding it.
struct TileValue {
  std::string var;
  TileAxes axes;
};

// The row (query) and column (key) axes' masks: a load is masked by those of the axes its
// address varies along. Loaded values outside them are 0.
struct TileMasks {
  std::string rows;     // "kf_m_valid[:, None]"
  std::string columns;  // "kf_n_valid[None, :]"
};

class TileExpressions {
 public:
  // Values in `computed` are computed here from their inputs (IsTileRecomputable ops); any other
  // value is loaded from "<VarName>_ptr" through its strides. Lines go to `out`; helpers it
  // calls are recorded in `helpers`.
  TileExpressions(const ir::Graph& graph, std::set<ir::ValueId> computed, TileMasks masks, SourceWriter& out,
                  std::set<std::string>& helpers);

  // The value of `ref` at `index` (one DimIndex per dim of `ref`). InvalidArgument naming a node
  // it cannot compute.
  Result<TileValue> At(ir::NodeRef ref, const TileIndex& index);

  // `index` of a tensor of shape `to` for a tensor of shape `from` that broadcasts to it.
  static TileIndex Broadcast(const ir::Shape& from, const ir::Shape& to, const TileIndex& index);

 private:
  Result<TileValue> Compute(const ir::OpNode& op, const TileIndex& index);
  Result<TileValue> Pointwise(const ir::OpNode& op, const TileIndex& index);
  Result<TileValue> Gather(const ir::OpNode& op, const TileIndex& index);
  Result<TileValue> Load(ir::NodeRef ref, const TileIndex& index);
  // The input's index for a view or copy's output `index`; nullopt for other ops.
  Result<TileIndex> ViewInput(const ir::OpNode& op, const TileIndex& index);
  // Emits `expr` into a fresh variable named after `ref`.
  TileValue Bind(ir::NodeRef ref, const std::string& expr, TileAxes axes);

  const ir::Graph& graph_;
  std::set<ir::ValueId> computed_;
  TileMasks masks_;
  SourceWriter& out_;
  std::set<std::string>& helpers_;
  std::map<std::string, TileValue> memo_;  // by value and index
  std::set<std::string> taken_;            // variables bound so far
};

}  // namespace kforge::codegen
