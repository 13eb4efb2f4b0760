// The pointwise epilogue shared by the kernels whose groups are an anchor (a matmul, a
// convolution, a pooling window) plus same-shape pointwise consumers: which of the group's inputs
// the epilogue reads, and the code that loads them, computes the consumers and stores the outputs.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

// "index * stride" ("index" for 1, "" for 0): one term of an address expression.
std::string Term(const std::string& index, int64_t stride);
// The non-empty terms joined by " + "; "0" when there are none.
std::string Sum(const std::vector<std::string>& terms);

// The epilogue's external inputs: the group's inputs other than `operands`, each of which must be
// floating point and broadcast to `out_shape` (else InvalidArgument naming it).
Result<std::vector<ir::NodeRef>> EpilogueInputs(const ir::Graph& graph, const passes::FusionGroup& group,
                                                const std::vector<ir::NodeRef>& operands, const ir::Shape& out_shape);

// The pointwise epilogue on the anchor's value (already bound to its variable) and the stores,
// under the tile mask `kf_mask`. `index[d]` is the tile-shaped index expression of the output's dim d.
Status EmitEpilogue(SourceWriter& out, const ir::Graph& graph, const passes::FusionGroup& group,
                    const std::vector<ir::NodeRef>& inputs, const std::vector<ir::NodeRef>& outputs,
                    const ir::Shape& out_shape, const std::vector<std::string>& index, EmittedKernel& kernel);

}  // namespace kforge::codegen
