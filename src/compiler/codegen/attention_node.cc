#include "compiler/codegen/attention_node.h"

#include <fmt/format.h>

namespace kforge::codegen {

Result<AttentionNode> ReadAttentionNode(const ir::Graph& graph, const ir::OpNode& node) {
  AttentionNode a;
  a.node = &node;
  a.q = node.args.at(0).As<ir::NodeRef>();
  a.k = node.args.at(1).As<ir::NodeRef>();
  a.v = node.args.at(2).As<ir::NodeRef>();
  if (node.args.size() > 3 && node.args[3].Is<ir::NodeRef>()) a.bias = node.args[3].As<ir::NodeRef>();
  a.attributes = passes::AttentionAttributes::Of(node);
  const ir::Shape &q = graph.TypeOf(a.q)->shape, &k = graph.TypeOf(a.k)->shape, &v = graph.TypeOf(a.v)->shape;
  a.rank = q.size();
  if (a.rank != 3 && a.rank != 4) return Status::InvalidArgument(fmt::format("%{}: attention of rank {}", node.name, a.rank));
  a.batch = q[0];
  a.heads = a.rank == 4 ? q[1] : 1;
  a.tq = q[a.rank - 2];
  a.d = q[a.rank - 1];
  a.tk = k[a.rank - 2];
  a.dv = v[a.rank - 1];
  return a;
}

}  // namespace kforge::codegen
