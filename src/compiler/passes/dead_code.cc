#include "compiler/passes/dead_code.h"

#include <vector>

#include "compiler/ir/visitor.h"

namespace kforge::passes {
namespace {

// Whether each value is needed by a graph output or a mutation's new value, found walking
// backwards from them.
std::vector<bool> LiveValues(const ir::Graph& graph) {
  std::vector<bool> live(static_cast<size_t>(graph.size()), false);
  for (const ir::NodeRef& out : graph.LiveOuts()) live[static_cast<size_t>(out.value)] = true;
  for (ir::ValueId id = graph.size() - 1; id >= 0; --id) {
    const ir::Value& value = graph.value(id);
    const auto* node = value.TryAs<ir::OpNode>();
    if (node == nullptr || !live[static_cast<size_t>(id)]) continue;
    auto mark = [&](const ir::NodeRef& ref) { live[static_cast<size_t>(ref.value)] = true; };
    for (const ir::Argument& argument : node->args) ir::ForEachRef(argument, mark);
    for (const auto& named : node->kwargs) ir::ForEachRef(named.argument, mark);
  }
  return live;
}

class DeadCodeRemover : public ir::GraphRewriter {
 public:
  explicit DeadCodeRemover(std::vector<bool> live) : live_(std::move(live)) {}

 protected:
  Status RewriteOp(const ir::OpNode& node) override {
    if (!live_[static_cast<size_t>(node.id)]) return Status::Ok();
    return CopyOp(node);
  }

 private:
  std::vector<bool> live_;
};

}  // namespace

Result<ir::Graph> RemoveDeadCode(const ir::Graph& graph) {
  DeadCodeRemover remover(LiveValues(graph));
  return remover.Rewrite(graph);
}

}  // namespace kforge::passes
