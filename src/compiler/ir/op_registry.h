// What the compiler knows about each core ATen op: its semantics category and a few facts used
// by the verifier and by fusion. Lookup is by the captured name ("aten.add.Tensor"); an op not
// in the table is kOpaque, never an error. The table is immutable and safe to read from threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge::ir {

// The attention node the attention pass writes (no ATen operator; see passes/attention.h).
inline constexpr char kAttentionOp[] = "kforge.attention.default";
// A recurrent layer's walk over time steps, which the recurrence pass writes (passes/recurrence.h).
inline constexpr char kRnnScanOp[] = "kforge.rnn_scan.default";

enum class OpKind {
  kPointwise,  // elementwise, NumPy-broadcasting tensor inputs
  kReduction,
  kMatmul,
  kConvolution,
  kPooling,
  kNormalization,  // layer/group/batch norm, softmax
  kView,           // shape/stride changes of one input
  kDataMovement,   // copies and rearranges elements without arithmetic
  kScan,
  kIndex,     // gather/scatter through index tensors
  kCreation,  // makes a tensor from scalars or another's metadata
  kAttention,  // kforge's own: softmax(scale * q @ k^T + bias) @ v, made by the attention pass
  kRecurrence,  // kforge's own: a recurrent cell over time steps, made by the recurrence pass
  kOpaque,    // unknown to the compiler: kept as a library call
};

const char* ToString(OpKind kind);

// Where an argument sits in an op's schema: its position (-1 when keyword-only) and its name.
// A slot with no name means the op has no such argument.
struct ArgSlot {
  int position = -1;
  const char* name = nullptr;

  bool present() const { return name != nullptr; }
};

struct OpInfo {
  std::string name;  // "aten.sum.dim_IntList"
  OpKind kind = OpKind::kOpaque;
  // Tensor and Tensor? parameters of the schema, not counting Tensor[] lists. A captured call may
  // pass a Python scalar in a Tensor slot (add.Tensor(x, 2)), so a node has at most this many.
  int tensor_inputs = 1;
  ArgSlot dims;                  // reductions, scans, softmax: the dimension(s); absent = all
  ArgSlot keepdim;               // reductions
  bool metadata_only = false;    // views that never copy
  bool preserves_numel = false;  // views whose output has exactly the input's element count
};

// The registry's entry for `op`, or nullptr when the op is unknown.
const OpInfo* FindOp(std::string_view op);
// The category of `op`; kOpaque when unknown.
OpKind OpKindOf(std::string_view op);
// Every entry, in table order.
const std::vector<OpInfo>& AllOps();

}  // namespace kforge::ir
