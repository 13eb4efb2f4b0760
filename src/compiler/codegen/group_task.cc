#include "compiler/codegen/group_task.h"

#include <map>
#include <utility>

#include <fmt/format.h>

#include "compiler/codegen/aten_call.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "core/hash.h"

namespace kforge::codegen {
namespace {

std::pair<ir::ValueId, int32_t> Key(ir::NodeRef ref) { return {ref.value, ref.output}; }

// Random values of a tensor's dtype: normal floats, small non-negative integers (valid as indices
// into any dim), fair booleans.
std::string RandomTensor(const ir::TensorType& type) {
  std::string shape = ShapeTuple(type.shape);
  if (ir::IsFloatingPoint(type.dtype)) return fmt::format("torch.randn({}, dtype={})", shape, TorchDType(type.dtype));
  if (type.dtype == ir::DType::kBool) return fmt::format("torch.rand({}) < 0.5", shape);
  return fmt::format("torch.randint(0, 2, {}, dtype={})", shape, TorchDType(type.dtype));
}

}  // namespace

Result<GroupTask> WriteGroupTask(const ir::Graph& graph, const passes::FusionGroup& group) {
  if (group.nodes.empty() || group.kind == passes::FusionGroup::Kind::kView) {
    return Status::InvalidArgument(fmt::format("group {} computes nothing to write a kernel for", group.name));
  }
  GroupTask task;
  task.group = group.name;
  task.outputs = passes::GroupOutputs(graph, group);
  if (task.outputs.empty()) return Status::InvalidArgument(fmt::format("group {} has no outputs", group.name));
  std::map<std::pair<ir::ValueId, int32_t>, std::string> names;
  std::vector<std::pair<std::string, const ir::ConstantValue*>> constants;
  for (const ir::NodeRef& ref : passes::GroupInputs(graph, group)) {
    if (const auto* constant = graph.value(ref.value).TryAs<ir::ConstantValue>()) {
      if (!constant->scalar || constant->type().rank() != 0) {
        return Status::InvalidArgument(fmt::format("%{}: a non-scalar constant", constant->name));
      }
      names[Key(ref)] = fmt::format("c{}", constants.size());
      constants.emplace_back(names[Key(ref)], constant);
      continue;
    }
    names[Key(ref)] = fmt::format("in{}", task.inputs.size());
    task.inputs.push_back(ref);
  }
  int values = 0;
  for (ir::ValueId id : group.nodes) {
    const auto& op = graph.value(id).As<ir::OpNode>();
    for (int32_t i = 0; i < op.num_outputs(); ++i) names[Key(op.ref(i))] = fmt::format("v{}", values++);
  }
  auto name = [&names](ir::NodeRef ref) { return names.at(Key(ref)); };

  std::vector<std::string> nodes, args = {"self"}, inputs, results;
  for (ir::ValueId id : group.nodes) nodes.push_back(graph.value(id).As<ir::OpNode>().op);
  for (const ir::NodeRef& ref : task.inputs) {
    args.push_back(name(ref));
    inputs.push_back(RandomTensor(*graph.TypeOf(ref)));
  }
  for (const ir::NodeRef& ref : task.outputs) results.push_back(name(ref));

  SourceWriter out;
  out.Line("import torch");
  out.Line("import torch.nn as nn");
  out.Blank();
  out.Blank();
  out.Open("class Model(nn.Module):");
  out.Line(fmt::format("\"\"\"One fused group ({}): {}.\"\"\"", passes::ToString(group.kind), fmt::join(nodes, ", ")));
  out.Blank();
  out.Open(fmt::format("def forward({}):", fmt::join(args, ", ")));
  out.Line(task.inputs.empty() ? "device = torch.device(\"cpu\")" : "device = in0.device");
  for (const auto& [constant_name, constant] : constants) {
    out.Line(ScalarConstant(constant_name, *constant->scalar, constant->type().dtype));
  }
  for (ir::ValueId id : group.nodes) out.Line(AtenCallLine(graph.value(id).As<ir::OpNode>(), name));
  out.Line(results.size() == 1 ? "return " + results[0] : fmt::format("return ({},)", fmt::join(results, ", ")));
  out.Close();
  out.Close();
  out.Blank();
  out.Blank();
  out.Open("def get_inputs():");
  out.Line(fmt::format("return [{}]", fmt::join(inputs, ", ")));
  out.Close();
  out.Blank();
  out.Blank();
  out.Open("def get_init_inputs():");
  out.Line("return []");
  out.Close();
  task.source = out.text();
  task.signature = Sha256Hex(task.source);
  return task;
}

}  // namespace kforge::codegen
