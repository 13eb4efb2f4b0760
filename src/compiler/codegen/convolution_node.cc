#include "compiler/codegen/convolution_node.h"

#include <fmt/format.h>

#include "compiler/codegen/epilogue.h"
#include "compiler/codegen/python_names.h"

namespace kforge::codegen {

Result<ConvolutionNode> ReadConvolution(const ir::Graph& graph, const passes::FusionGroup& group) {
  const auto& anchor = graph.value(group.nodes.front()).As<ir::OpNode>();
  ConvolutionNode conv;
  conv.result = anchor.ref();
  conv.x = anchor.args[0].As<ir::NodeRef>();
  conv.w = anchor.args[1].As<ir::NodeRef>();
  if (anchor.args[2].Is<ir::NodeRef>()) conv.bias = anchor.args[2].As<ir::NodeRef>();
  conv.x_type = graph.TypeOf(conv.x);
  conv.w_type = graph.TypeOf(conv.w);
  conv.out_shape = anchor.type().shape;
  conv.spatial = conv.out_shape.size() - 2;
  conv.stride = anchor.args[3].As<ir::IntList>();
  conv.padding = anchor.args[4].As<ir::IntList>();
  conv.dilation = anchor.args[5].As<ir::IntList>();
  conv.transposed = anchor.args[6].As<bool>();
  conv.groups = anchor.args[8].As<int64_t>();
  conv.images = conv.out_shape[0];
  conv.co_g = conv.out_shape[1] / conv.groups;
  conv.ci_g = conv.x_type->shape[1] / conv.groups;
  for (size_t d = 0; d < conv.spatial; ++d) {
    conv.positions *= conv.out_shape[2 + d];
    conv.taps *= conv.w_type->shape[2 + d];
  }
  std::vector<ir::NodeRef> operands = {conv.x, conv.w};
  if (conv.bias) operands.push_back(*conv.bias);
  ASSIGN_OR_RETURN(conv.inputs, EpilogueInputs(graph, group, operands, conv.out_shape));
  conv.outputs = passes::GroupOutputs(graph, group);
  return conv;
}

std::vector<std::string> ConvolutionParams(const ir::Graph& graph, const ConvolutionNode& conv) {
  std::vector<std::string> params = {"kf_x_ptr", "kf_w_ptr"};
  if (conv.bias) params.push_back("kf_bias_ptr");
  for (const ir::NodeRef& ref : conv.inputs) params.push_back(VarName(graph, ref) + "_ptr");
  for (const ir::NodeRef& ref : conv.outputs) params.push_back(VarName(graph, ref) + "_ptr");
  return params;
}

std::vector<std::string> ConvolutionArgs(const ir::Graph& graph, const ConvolutionNode& conv, const std::string& x_arg,
                                         const std::string& w_arg) {
  std::vector<std::string> args = {x_arg, w_arg};
  if (conv.bias) args.push_back(VarName(graph, *conv.bias));
  for (const ir::NodeRef& ref : conv.inputs) args.push_back(VarName(graph, ref));
  return args;
}

Status EmitConvolutionEpilogue(SourceWriter& out, const ir::Graph& graph, const passes::FusionGroup& group,
                               const ConvolutionNode& conv, EmittedKernel& kernel) {
  if (conv.bias) out.Line(fmt::format("kf_acc += tl.load(kf_bias_ptr + kf_co, mask=kf_n < {}, other=0.0)[None, :]", conv.co_g));
  out.Line(fmt::format("{} = kf_acc", VarName(graph, conv.result)));
  std::vector<std::string> index = {"kf_img[:, None]", "kf_co[None, :]"};
  for (size_t d = 0; d < conv.spatial; ++d) index.push_back(fmt::format("kf_o{}[:, None]", d));
  return EmitEpilogue(out, graph, group, conv.inputs, conv.outputs, conv.out_shape, index, kernel);
}

}  // namespace kforge::codegen
