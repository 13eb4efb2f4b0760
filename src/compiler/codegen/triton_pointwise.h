// Emits one Triton kernel per pointwise fusion group: a 1-D grid over the output's elements with
// masked loads and stores, inputs broadcast through strides (one load per program for an input
// constant over the program's whole block), arithmetic in fp32.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/source_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

// What the launcher needs to know about an emitted kernel. Its arguments are, in order: a pointer
// per input, a pointer per output, numel, then (when `uses_sizes`) size_0.. of the output shape
// (compile-time constants), then BLOCK_SIZE. A `strided` input's strides (0 where it broadcasts)
// are literals in the source, as every emitter's are: no launch computes them.
struct PointwiseKernel {
  std::string name;                 // "fused_relu"
  std::string source;               // the @triton.jit function
  ir::Shape shape;                  // the iteration space: every output's shape
  std::vector<ir::NodeRef> inputs;  // external tensor inputs, in argument order
  std::vector<bool> strided;        // per input: addressed through strides, not the flat offset
  std::vector<ir::NodeRef> outputs;
  bool uses_sizes = false;
  std::set<std::string> helpers;    // helper functions it calls ("_kf_tanh"), see EmitPointwiseHelpers
};

// What a loaded value of `dtype` is cast with to compute: other floating types to fp32 (""
// for fp32); booleans and integers (masks, indices, labels) stay as they are.
std::string ComputeCast(ir::DType dtype);

// The Triton expression for pointwise `op` over its operands' variables (VarName), in fp32;
// records the helpers it calls. InvalidArgument naming the node when it cannot be translated.
Result<std::string> PointwiseExpression(const ir::Graph& graph, const ir::OpNode& op, std::set<std::string>& helpers);

// InvalidArgument naming the first node it cannot translate (unsupported op, argument or dtype).
Result<PointwiseKernel> EmitPointwiseKernel(const ir::Graph& graph, const passes::FusionGroup& group);
// The @triton.jit helper functions named in `helpers` (and those they call), in dependency order.
void EmitPointwiseHelpers(const std::set<std::string>& helpers, SourceWriter& out);

}  // namespace kforge::codegen
