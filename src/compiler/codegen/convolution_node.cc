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

OutputPhases PhasesOf(const ConvolutionNode& conv) {
  OutputPhases phases;
  for (size_t d = 0; d < conv.spatial; ++d) {
    const int64_t stride = conv.stride[d];
    phases.count *= stride;
    phases.tile_dims.push_back((conv.out_shape[2 + d] + stride - 1) / stride);
    phases.reach.push_back((conv.w_type->shape[2 + d] + stride - 1) / stride);
    phases.positions *= phases.tile_dims.back();
    phases.taps *= phases.reach.back();
  }
  return phases;
}

void EmitPhase(SourceWriter& out, const ConvolutionNode& conv, const std::string& phase) {
  out.Line(fmt::format("kf_prem = {}", phase));
  for (size_t d = conv.spatial; d-- > 0;) {
    out.Line(fmt::format("kf_r{} = kf_prem % {}", d, conv.stride[d]));
    if (d > 0) out.Line(fmt::format("kf_prem = kf_prem // {}", conv.stride[d]));
  }
}

void EmitPhasePositions(SourceWriter& out, const ConvolutionNode& conv) {
  for (size_t d = 0; d < conv.spatial; ++d) {
    out.Line(fmt::format("kf_o{0} = kf_q{0} * {1} + kf_r{0}", d, conv.stride[d]));
    out.Line(fmt::format("kf_first{0} = (kf_r{0} + {1}) % {2}", d, conv.padding[d], conv.stride[d]));
  }
}

std::string EmitPhaseTap(SourceWriter& out, const ConvolutionNode& conv, size_t d) {
  out.Line(fmt::format("kf_span{0} = kf_o{0} + {1} - kf_t{0}", d, conv.padding[d]));
  out.Line(fmt::format("kf_in{0} = kf_span{0} // {1}", d, conv.stride[d]));
  return fmt::format(" & (kf_span{0} >= 0) & (kf_in{0} < {1}) & (kf_t{0} < {2})", d, conv.x_type->shape[2 + d],
                     conv.w_type->shape[2 + d]);
}

}  // namespace kforge::codegen
