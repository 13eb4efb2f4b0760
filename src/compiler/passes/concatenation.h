// Concatenations written in place. A captured `cat` copies every input into a new tensor; where
// its inputs are computed by kernels for it alone, each kernel can write its result straight into
// its slice of the concatenation instead, and the copy disappears. DenseNet concatenates a growing
// list (`cat([x, f1])`, `cat([x, f1, f2])`, ...): every such cat is a leading slice of the last
// one, so one buffer holds them all and none is copied (only x, the block's input, once).
//
// A family: the longest cat (the buffer) and the cats along the same dim whose inputs are a
// leading part of its inputs (its members). In the buffer's layout (row-major):
// - a member is the buffer's leading slice along the dim (a view: the buffer's strides);
// - a slot is an input the buffer holds once, made by a kernel that writes through its result's
//   strides (a convolution or a fusable pointwise op), read by nothing but cats and not returned:
//   it is written into its slice, typed with the buffer's strides;
// - every other input (a graph input, a view, a value read elsewhere) is copied into its slice
//   once, before the first member that holds it.
// A member other than the buffer is returned by nothing and read only by ops whose kernels read
// through their inputs' strides (pointwise, reductions, norms, convolutions, pooling, cats); a
// cat that fails this stays a cat of its own (it then copies, slots included). A family needs a
// slot or a second member: otherwise nothing is saved.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

struct Concatenation {
  struct Part {
    ir::NodeRef value;
    int64_t offset = 0;  // along `dim`, in elements of that dim
    int64_t size = 0;
    bool slot = false;  // written in place by its kernel; otherwise copied in
  };
  ir::ValueId buffer = -1;            // the longest cat: its result is the buffer
  int64_t dim = 0;                    // non-negative
  std::vector<ir::ValueId> members;   // the cats that are leading slices, the buffer included, in graph order
  std::vector<Part> parts;            // the buffer's inputs in order
};

// The families of `graph` by the rules above, whatever the strides their values carry now.
std::vector<Concatenation> FindConcatenations(const ir::Graph& graph);

// The pass: each family's members and slots retyped with their buffer's strides.
Result<ir::Graph> ConcatenateInPlace(const ir::Graph& graph);

// The families the pass laid out in `graph` (what the model writer writes in place): those whose
// members all carry their buffer's strides, with a part a slot only where it carries them too.
std::vector<Concatenation> ConcatenationsInPlace(const ir::Graph& graph);

}  // namespace kforge::passes
