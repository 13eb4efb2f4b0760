// The forward's lines for the concatenations the "concatenations" pass laid out
// (passes::Concatenation): each family's buffer allocated where it is first needed, each slot's
// allocation made a view of its slice (its kernel then writes into the buffer), the other parts
// copied into their slices once, and each member a view of the buffer's leading slice. A slot
// whose allocation never comes by in its own layout (its group ran as a library call; a reduction
// kernel allocates its kept values dense) is copied in like any other part, so the members hold
// the right values whatever wrote the slot.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/passes/concatenation.h"

namespace kforge::codegen {

class ConcatenationWriter {
 public:
  explicit ConcatenationWriter(const ir::Graph& graph);

  // The lines standing for the allocation `line` where it allocates a slot in the slot's layout;
  // nullopt otherwise.
  std::optional<std::vector<std::string>> Allocation(const std::string& line);
  bool IsMember(ir::ValueId id) const { return members_.count(id) > 0; }
  // The lines that make the member cat `op`; nullopt where `op` is no member.
  std::optional<std::vector<std::string>> Member(const ir::OpNode& op);

 private:
  // The allocation of `family`'s buffer the first time it is needed, else nothing.
  std::vector<std::string> Buffer(size_t family);
  std::string Slice(const passes::Concatenation& family, int64_t offset, int64_t size) const;

  const ir::Graph& graph_;
  std::vector<passes::Concatenation> families_;
  std::map<std::string, std::pair<size_t, size_t>> slots_;  // a slot's allocation in its layout -> (family, part)
  std::map<ir::ValueId, size_t> members_;                   // member id -> family
  std::set<size_t> allocated_;                              // families whose buffer exists
  std::set<std::pair<size_t, size_t>> filled_;              // (family, part) in the buffer by now
};

}  // namespace kforge::codegen
