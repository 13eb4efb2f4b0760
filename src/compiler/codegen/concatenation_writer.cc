#include "compiler/codegen/concatenation_writer.h"

#include <fmt/format.h>

#include "compiler/codegen/python_names.h"

namespace kforge::codegen {

ConcatenationWriter::ConcatenationWriter(const ir::Graph& graph)
    : graph_(graph), families_(passes::ConcatenationsInPlace(graph)) {
  for (size_t f = 0; f < families_.size(); ++f) {
    for (ir::ValueId member : families_[f].members) members_[member] = f;
    for (size_t p = 0; p < families_[f].parts.size(); ++p) {
      const ir::NodeRef value = families_[f].parts[p].value;
      if (families_[f].parts[p].slot) slots_[EmptyLike(VarName(graph_, value), *graph_.TypeOf(value))] = {f, p};
    }
  }
}

std::vector<std::string> ConcatenationWriter::Buffer(size_t family) {
  if (!allocated_.insert(family).second) return {};
  const ir::Value& buffer = graph_.value(families_[family].buffer);
  return {fmt::format("# %{}: one buffer that its parts are written into and its leading slices view", buffer.name),
          EmptyLike(VarName(graph_, buffer.ref()), buffer.type())};
}

std::string ConcatenationWriter::Slice(const passes::Concatenation& family, int64_t offset, int64_t size) const {
  return fmt::format("{}.narrow({}, {}, {})", VarName(graph_, graph_.value(family.buffer).ref()), family.dim, offset, size);
}

std::optional<std::vector<std::string>> ConcatenationWriter::Allocation(const std::string& line) {
  // Only an allocation in the slot's own layout: a kernel that stores the value at other offsets
  // (a reduction's kept values, dense at their flat index) allocates it otherwise, and it is copied in.
  auto slot = slots_.find(line);
  if (slot == slots_.end()) return std::nullopt;
  const auto [f, p] = slot->second;
  if (!filled_.insert({f, p}).second) return std::nullopt;
  const passes::Concatenation& family = families_[f];
  const passes::Concatenation::Part& part = family.parts[p];
  std::vector<std::string> lines = Buffer(f);
  lines.push_back(fmt::format("{} = {}  # written in place", VarName(graph_, part.value), Slice(family, part.offset, part.size)));
  return lines;
}

std::optional<std::vector<std::string>> ConcatenationWriter::Member(const ir::OpNode& op) {
  auto found = members_.find(op.id);
  if (found == members_.end()) return std::nullopt;
  const size_t f = found->second;
  const passes::Concatenation& family = families_[f];
  std::vector<std::string> lines = Buffer(f);
  const int64_t extent = op.type().shape[static_cast<size_t>(family.dim)];
  for (size_t p = 0; p < family.parts.size() && family.parts[p].offset < extent; ++p) {
    const passes::Concatenation::Part& part = family.parts[p];
    if (!filled_.insert({f, p}).second) continue;
    lines.push_back(fmt::format("{}.copy_({})", Slice(family, part.offset, part.size), VarName(graph_, part.value)));
  }
  const std::string name = VarName(graph_, op.ref());
  if (op.id == family.buffer) {
    lines.push_back(fmt::format("# %{}: its parts are in place", op.name));
  } else {
    lines.push_back(fmt::format("{} = {}  # its leading slice", name, Slice(family, 0, extent)));
  }
  return lines;
}

}  // namespace kforge::codegen
