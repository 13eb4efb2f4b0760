#include "compiler/codegen/model_writer.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/aten_call.h"
#include "compiler/codegen/attention_node.h"
#include "compiler/codegen/compile_ahead.h"
#include "compiler/codegen/concatenation_writer.h"
#include "compiler/codegen/cuda_kernel.h"
#include "compiler/codegen/graph_replay.h"
#include "compiler/codegen/kernel_identity.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/codegen/triton_attention.h"
#include "compiler/codegen/triton_conv.h"
#include "compiler/codegen/triton_matmul.h"
#include "compiler/codegen/triton_pointwise.h"
#include "compiler/codegen/triton_recurrence.h"
#include "compiler/codegen/triton_reduction.h"
#include "compiler/codegen/triton_window.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::codegen {
namespace {

std::vector<std::string> Split(const std::string& target) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = target.find('.', start)) != std::string::npos; start = dot + 1) {
    parts.push_back(target.substr(start, dot - start));
  }
  parts.push_back(target.substr(start));
  return parts;
}

std::string Quote(const std::string& text) { return "\"" + text + "\""; }

// "self.linear" for the module holding `parts[0..n-1]`, through get_submodule when a part is not an identifier.
std::string ModuleExpr(const std::vector<std::string>& parts, size_t n) {
  std::string expr = "self";
  for (size_t i = 0; i < n; ++i) {
    if (!IsPythonIdentifier(parts[i])) {
      std::vector<std::string> path(parts.begin(), parts.begin() + static_cast<long>(n));
      return fmt::format("self.get_submodule({})", Quote(fmt::format("{}", fmt::join(path, "."))));
    }
    expr += "." + parts[i];
  }
  return expr;
}

// The parameter or buffer whose memory `ref` may be, itself or through views (a reshape may be a
// view too); nullptr for a value computed into memory of its own.
const ir::ParameterValue* AliasedState(const ir::Graph& graph, ir::NodeRef ref) {
  for (;;) {
    const ir::Value& value = graph.value(ref.value);
    if (const auto* state = value.TryAs<ir::ParameterValue>()) return state;
    const auto* op = value.TryAs<ir::OpNode>();
    if (op == nullptr || op->op_kind() != ir::OpKind::kView || op->args.empty() || !op->args[0].Is<ir::NodeRef>()) {
      return nullptr;
    }
    ref = op->args[0].As<ir::NodeRef>();
  }
}

// Whether the write-back must copy `mutation`'s new value before writing any state: it is (a view
// of) state that some mutation overwrites, other than its own target as it is (a buffer swap, in
// export's form: `a <- clone(b)`, `b <- a`).
bool ReadsOverwrittenState(const ir::Graph& graph, const ir::Mutation& mutation) {
  const ir::ParameterValue* state = AliasedState(graph, mutation.value);
  if (state == nullptr || (state->target == mutation.target && state->ref() == mutation.value)) return false;
  for (const ir::Mutation& other : graph.mutations()) {
    if (other.target == state->target) return true;
  }
  return false;
}

// `line` with its launches of kernel `from` ("from[grid](...)") launching `to` instead.
std::string RenameLaunches(const std::string& line, const std::string& from, const std::string& to) {
  std::string out;
  size_t copied = 0;
  for (size_t at = line.find(from + "["); at != std::string::npos; at = line.find(from + "[", at + 1)) {
    const bool whole_name = at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
    if (!whole_name) continue;
    out += line.substr(copied, at - copied) + to;
    copied = at + from.size();
  }
  return out + line.substr(copied);
}

// The product groups whose outputs attention reads, through ops that move data without computing
// (views, splits, copies): as q or k (`scores`: their rounding reaches the scores unchanged), or
// only as v (`values`).
struct AttentionProducts {
  std::set<std::string> scores, values;
};

AttentionProducts ProductsFeedingAttention(const ir::Graph& graph, const passes::FusionPlan& plan) {
  using Kind = passes::FusionGroup::Kind;
  std::map<ir::ValueId, const passes::FusionGroup*> group_of;
  for (const passes::FusionGroup& group : plan.groups) {
    for (ir::ValueId id : group.nodes) group_of[id] = &group;
  }
  AttentionProducts products;
  auto trace = [&](std::vector<ir::NodeRef> starts, std::set<std::string>& feeding) {
    passes::WalkBackThroughDataMovement(graph, std::move(starts), [&](const ir::NodeRef& ref) {
      auto producer = group_of.find(ref.value);
      if (producer != group_of.end() && producer->second->kind == Kind::kMatmul) feeding.insert(producer->second->name);
      return true;
    });
  };
  for (const passes::FusionGroup& group : plan.groups) {
    if (group.kind != Kind::kAttention) continue;
    Result<AttentionNode> attention = ReadAttentionNode(graph, graph.value(group.nodes.back()).As<ir::OpNode>());
    if (!attention.ok()) continue;
    trace({attention->q, attention->k}, products.scores);
    trace({attention->v}, products.values);
  }
  for (const std::string& name : products.scores) products.values.erase(name);
  return products;
}

// The kernel options of the products attention reads from: their own dot precision where one is set.
KernelOptions WithDotPrecision(KernelOptions options, const std::string& precision) {
  if (!precision.empty()) options.dot_precision = precision;
  return options;
}

// One planned graph as Python: its kernels (emitted first, since they decide the helpers and
// which groups fall back to ATen calls), then an nn.Module class that runs the groups in order.
class Writer {
 public:
  Writer(const ir::Graph& graph, const passes::FusionPlan& plan, const ModelWriterOptions& options)
      : graph_(graph),
        plan_(plan),
        options_(options),
        attention_products_(ProductsFeedingAttention(graph, plan)),
        score_input_options_(WithDotPrecision(options.kernel, options.kernel.attention_input_dot_precision)),
        value_input_options_(WithDotPrecision(options.kernel, options.kernel.attention_value_dot_precision)) {}

  Result<GraphModule> Run(const std::string& class_name) {
    GraphModule module;
    SourceWriter definitions;
    for (const passes::FusionGroup& group : plan_.groups) {
      if (options_.substitutes.count(group.name)) continue;
      std::optional<std::string> source;
      Status emitted = EmitKernel(group, source, module.helpers);
      if (!emitted.ok()) {
        if (!options_.fallback_unsupported) return emitted.WithContext("group " + group.name);
        fallback_reason_[group.name] = emitted.message();
      }
      if (source && SameAsAnEarlierKernel(group.name, *source)) source.reset();
      if (source) {
        if (auto kernel = emitted_.find(group.name); kernel != emitted_.end() && kernel->second.cuda_tuning) {
          module.cuda_tuning.push_back(*kernel->second.cuda_tuning);
        }
        definitions.Lines(*source);
        definitions.Blank();
        definitions.Blank();
      }
    }
    for (const auto& [group, substitute] : options_.substitutes) {
      definitions.Line(fmt::format("# Written and verified for group {} alone.", group));
      definitions.Lines(substitute.module_source);
      definitions.Blank();
      definitions.Blank();
    }
    module.definitions = definitions.text();
    module.no_kernel = fallback_reason_;
    class_name_ = class_name;
    const ReplayChoice choice = ChooseReplay(options_.graph_replay, Shape());
    module.replay_undecided = choice == ReplayChoice::kMeasure;
    replay_ = choice == ReplayChoice::kReplay || (module.replay_undecided && options_.replay_undecided);
    if (replay_) module.helpers.insert(kGraphReplayHelper);
    out_.Open(fmt::format("class {}(nn.Module):", class_name));
    if (options_.compile_ahead && RunsWithoutKernels()) {
      std::vector<std::string> restores;
      for (const ir::Mutation& mutation : graph_.mutations()) restores.push_back(mutation.target);
      EmitCompileAheadDeclaration(out_, replay_ ? "kf_forward" : "forward", restores);
      out_.Blank();
    }
    EmitInit();
    out_.Blank();
    if (replay_) {
      EmitReplayingForward();
      out_.Blank();
    }
    RETURN_IF_ERROR(EmitForward());
    out_.Close();
    module.module_class = out_.text();
    return module;
  }

 private:
  // The group's kernel source into `source` (none for views and library groups); the error of an
  // emitter that cannot translate it.
  Status EmitKernel(const passes::FusionGroup& group, std::optional<std::string>& source, std::set<std::string>& helpers) {
    using Kind = passes::FusionGroup::Kind;
    if (group.kind == Kind::kLibrary || group.kind == Kind::kView) return Status::Ok();
    if (group.kind == Kind::kPointwise) {
      Result<PointwiseKernel> kernel = EmitPointwiseKernel(graph_, group);
      if (!kernel.ok()) return kernel.status();
      helpers.insert(kernel->helpers.begin(), kernel->helpers.end());
      source = kernel->source;
      kernels_[group.name] = std::move(kernel).value();
      return Status::Ok();
    }
    const KernelOptions& product = attention_products_.scores.count(group.name)   ? score_input_options_
                                   : attention_products_.values.count(group.name) ? value_input_options_
                                                                                  : options_.kernel;
    Result<EmittedKernel> kernel = group.kind == Kind::kReduction   ? EmitReductionKernel(graph_, group, options_.kernel)
                                   : group.kind == Kind::kMatmul    ? EmitMatmulKernel(graph_, group, product)
                                   : group.kind == Kind::kAttention ? EmitAttentionKernel(graph_, group, options_.kernel)
                                   : group.kind == Kind::kRecurrence ? EmitRecurrenceKernel(graph_, group, options_.kernel)
                                                                    : EmitWindowKernel(graph_, group, options_.block_size);
    if (!kernel.ok()) return kernel.status();
    helpers.insert(kernel->helpers.begin(), kernel->helpers.end());
    source = kernel->source;
    emitted_[group.name] = std::move(kernel).value();
    return Status::Ok();
  }

  // Whether the kernel just emitted for `group` is one emitted before under another name (a
  // repeated block of a network); if so the group launches that one.
  bool SameAsAnEarlierKernel(const std::string& group, const std::string& source) {
    auto pointwise = kernels_.find(group);
    auto emitted = emitted_.find(group);
    std::string& name = pointwise != kernels_.end() ? pointwise->second.name : emitted->second.name;
    auto [earlier, first] = kernel_by_identity_.emplace(CanonicalKernel(source, name), name);
    if (first) return false;
    if (emitted != emitted_.end()) {
      for (std::string& line : emitted->second.launch) line = RenameLaunches(line, name, earlier->second);
    }
    name = earlier->second;
    return true;
  }

  // Whether the forward may run with its kernels switched off (compile_ahead.h): it has kernels,
  // every op left to ATen is safe on tensors no kernel wrote, and no substitute module (code the
  // compiler did not write) runs in it.
  bool RunsWithoutKernels() const {
    if ((kernels_.empty() && emitted_.empty()) || !options_.substitutes.empty()) return false;
    for (const passes::FusionGroup& group : plan_.groups) {
      if (kernels_.count(group.name) || emitted_.count(group.name)) continue;
      for (ir::ValueId id : group.nodes) {
        if (!SafeOnUnwrittenTensors(graph_.value(id).As<ir::OpNode>().op_kind())) return false;
      }
    }
    return true;
  }

  // The forward's launches (kernels and library calls) and the bytes a graph replay would copy.
  ForwardShape Shape() const {
    ForwardShape shape;
    for (const passes::FusionGroup& group : plan_.groups) {
      if (kernels_.count(group.name) || options_.substitutes.count(group.name)) {
        ++shape.launches;
      } else if (auto emitted = emitted_.find(group.name); emitted != emitted_.end()) {
        for (const std::string& line : emitted->second.launch) {
          if (line.find("](") != std::string::npos) shape.launches += emitted->second.repeats;
        }
      } else if (group.kind != passes::FusionGroup::Kind::kView) {
        shape.launches += static_cast<int>(group.nodes.size());
      }
    }
    for (const ir::Value& value : graph_) {
      if (value.kind == ir::ValueKind::kInput) shape.copy_bytes += value.type().bytes();
    }
    for (const ir::NodeRef& ref : graph_.outputs()) shape.copy_bytes += graph_.TypeOf(ref)->bytes();
    return shape;
  }

  std::vector<std::string> InputNames() const {
    std::vector<std::string> names;
    for (const ir::Value& value : graph_) {
      if (value.kind == ir::ValueKind::kInput) names.push_back(VarName(graph_, value.ref()));
    }
    return names;
  }

  // forward() hands the kernels (kf_forward) to the graph replay.
  void EmitReplayingForward() {
    std::vector<std::string> inputs = InputNames();
    inputs.insert(inputs.begin(), "self");
    out_.Open(fmt::format("def forward({}):", fmt::join(inputs, ", ")));
    out_.Line("# The kernels below, replayed as one CUDA graph on the current stream (see KfGraphReplay).");
    inputs.erase(inputs.begin());
    out_.Line(fmt::format("return self.kf_replay(self, self.kf_forward, ({}{}))", fmt::join(inputs, ", "),
                          inputs.size() == 1 ? "," : ""));
    out_.Close();
  }

  void EmitInit() {
    out_.Open("def __init__(self, *args, **kwargs):");
    out_.Line("super().__init__()");
    if (replay_) out_.Line("self.kf_replay = KfGraphReplay()");
    for (const auto& [group, substitute] : options_.substitutes) {
      out_.Line(fmt::format("self.kf_{} = {}()", group, substitute.class_name));
    }
    std::set<std::string> made;
    for (const ir::Value& value : graph_) {
      const auto* param = value.TryAs<ir::ParameterValue>();
      if (param == nullptr) continue;
      std::vector<std::string> parts = Split(param->target);
      for (size_t n = 1; n < parts.size(); ++n) {
        std::string path = fmt::format("{}", fmt::join(parts.begin(), parts.begin() + static_cast<long>(n), "."));
        if (!made.insert(path).second) continue;
        out_.Line(fmt::format("{}.add_module({}, nn.Module())", ModuleExpr(parts, n - 1), Quote(parts[n - 1])));
      }
      std::string tensor = fmt::format("torch.empty({}, dtype={})", ShapeTuple(param->type().shape), TorchDType(param->type().dtype));
      std::string owner = ModuleExpr(parts, parts.size() - 1);
      if (param->parameter_kind == ir::ParameterKind::kBuffer) {
        out_.Line(fmt::format("{}.register_buffer({}, {})", owner, Quote(parts.back()), tensor));
      } else {
        bool grad = ir::IsFloatingPoint(param->type().dtype);
        out_.Line(fmt::format("{}.register_parameter({}, nn.Parameter({}{}))", owner, Quote(parts.back()), tensor,
                              grad ? "" : ", requires_grad=False"));
      }
    }
    out_.Close();
  }

  Status EmitForward() {
    std::vector<std::string> inputs = InputNames();
    inputs.insert(inputs.begin(), "self");
    out_.Open(fmt::format("def {}({}):", replay_ ? "kf_forward" : "forward", fmt::join(inputs, ", ")));
    // The kernels are specialized to the captured shapes and (dense) layouts: say so rather than
    // compute garbage for other shapes; make a strided view dense.
    std::string device_input;
    for (const ir::Value& value : graph_) {
      if (value.kind != ir::ValueKind::kInput) continue;
      std::string name = VarName(graph_, value.ref());
      const ir::TensorType& type = value.type();
      if (value.As<ir::InputValue>().python_number) continue;
      if (device_input.empty()) device_input = name;
      out_.Open(fmt::format("if tuple({}.shape) != {}:", name, ShapeTuple(type.shape)));
      out_.Line(fmt::format("raise ValueError(f\"{0} was generated for {1} of shape {2}; got {{tuple({1}.shape)}}: "
                            "regenerate it for these shapes\")", class_name_, name, ShapeTuple(type.shape)));
      out_.Close();
      if (type.is_contiguous()) out_.Line(fmt::format("{0} = {0}.contiguous()", name));
    }
    out_.Line(device_input.empty() ? "device = next(self.parameters(), torch.empty(0)).device"
                                   : fmt::format("device = {}.device", device_input));
    // A number the task passes as a Python scalar: the kernels read it as a 0-d tensor (a fill,
    // no arithmetic), made for each call from the value given.
    for (const ir::Value& value : graph_) {
      const auto* input = value.TryAs<ir::InputValue>();
      if (input == nullptr || !input->python_number) continue;
      const std::string name = VarName(graph_, value.ref());
      out_.Line(fmt::format("{0} = torch.full((), {0}, dtype={1}, device=device)", name, TorchDType(value.type().dtype)));
    }
    for (const ir::Value& value : graph_) {
      if (const auto* param = value.TryAs<ir::ParameterValue>()) {
        bool buffer = param->parameter_kind == ir::ParameterKind::kBuffer;
        out_.Line(fmt::format("{} = self.{}({})", VarName(graph_, value.ref()), buffer ? "get_buffer" : "get_parameter",
                              Quote(param->target)));
      } else if (const auto* constant = value.TryAs<ir::ConstantValue>()) {
        if (!constant->scalar || constant->type().rank() != 0) {
          return Status::InvalidArgument(fmt::format("%{}: cannot inline a non-scalar constant", constant->name));
        }
        out_.Line(ScalarConstant(VarName(graph_, value.ref()), *constant->scalar, constant->type().dtype));
      }
    }
    ChooseInPlaceUpdates();
    concatenations_.emplace(graph_);
    for (const passes::FusionGroup& group : plan_.groups) {
      out_.Blank();
      auto kernel = kernels_.find(group.name);
      auto emitted = emitted_.find(group.name);
      auto substitute = options_.substitutes.find(group.name);
      if (substitute != options_.substitutes.end()) {
        EmitSubstituteCall(group, substitute->second);
      } else if (kernel != kernels_.end()) {
        EmitLaunch(group, kernel->second);
      } else if (emitted != emitted_.end()) {
        std::vector<std::string> nodes;
        for (ir::ValueId id : group.nodes) nodes.push_back("%" + graph_.value(id).name);
        out_.Line(fmt::format("# {} {}: {} -> one {} kernel", ToString(group.kind), group.name, fmt::join(nodes, ", "),
                              emitted->second.helpers.count(kCudaKernelHelper) ? "CUDA C++" : "Triton"));
        for (const std::string& line : emitted->second.launch) EmitAllocationOrLaunch(line);
      } else {
        std::string why = fallback_reason_.count(group.name) ? " (no kernel: " + fallback_reason_[group.name] + ")" : "";
        const bool views = std::all_of(group.nodes.begin(), group.nodes.end(), [&](ir::ValueId id) {
          return concatenations_->IsMember(id);
        });
        out_.Line(views ? fmt::format("# concatenation {}: a view of its buffer", group.name)
                        : fmt::format("# {} {}{}", ToString(group.kind), group.name, why));
        for (ir::ValueId id : group.nodes) {
          const auto& op = graph_.value(id).As<ir::OpNode>();
          if (std::optional<std::vector<std::string>> lines = concatenations_->Member(op)) {
            for (const std::string& line : *lines) out_.Line(line);
            continue;
          }
          if (op.op == "aten.cat.default" && !op.type().is_contiguous()) {
            return Status::Internal(fmt::format("%{}: a cat laid out in its buffer by no concatenation", op.name));
          }
          EmitAtenCall(op);
        }
      }
    }
    EmitWriteBack();
    std::vector<std::string> results;
    for (const ir::NodeRef& ref : graph_.outputs()) results.push_back(VarName(graph_, ref));
    out_.Blank();
    out_.Line(results.size() == 1 ? "return " + results[0] : fmt::format("return ({},)", fmt::join(results, ", ")));
    out_.Close();
    return Status::Ok();
  }

  // The parameters and buffers forward() updates get their new values in place, once every group
  // has run (so no kernel reads a value already overwritten): copies, data movement and no
  // compute. A parameter that requires grad is written without recording it for autograd.
  void EmitWriteBack() {
    if (graph_.mutations().empty()) return;
    std::vector<std::string> targets;
    bool parameters = false;
    for (const ir::Mutation& mutation : graph_.mutations()) {
      targets.push_back(mutation.target);
      parameters = parameters || graph_.FindTarget(mutation.target)->parameter_kind == ir::ParameterKind::kParameter;
    }
    out_.Blank();
    out_.Line(fmt::format("# forward() updates {} in place", fmt::join(targets, ", ")));
    if (parameters) out_.Open("with torch.no_grad():");
    std::map<std::string, std::string> sources = EmitCopiesAside();
    for (const ir::Mutation& mutation : graph_.mutations()) {
      const std::string target = VarName(graph_, graph_.FindTarget(mutation.target)->ref());
      if (written_in_place_.count(mutation.target)) {
        out_.Line(fmt::format("# {} was written in place by the kernel that computes it", target));
        continue;
      }
      out_.Line(fmt::format("{}.copy_({})", target, sources[mutation.target]));
    }
    if (parameters) out_.Close();
  }

  // A buffer's new value that a kernel computes element by element from the buffer itself (a
  // training batch norm's running statistics, num_batches_tracked + 1) is written by that kernel
  // into the buffer's memory, saving a copy launch per buffer. Where: the buffer is read nowhere
  // else, only by pointwise ops of its own shape in that kernel, directly or through one view
  // (each element read by the program that writes it, before it writes it); the kernel's output
  // is the new value or views to it, and has the type of the buffer or of that view, contiguous;
  // the new value is not returned (the caller's tensor would change with the next call); the
  // kernel is one launch, not autotuned (it runs several times as it measures). Parameters keep
  // their copy.
  void ChooseInPlaceUpdates() {
    std::map<ir::ValueId, const passes::FusionGroup*> group_of;
    for (const passes::FusionGroup& group : plan_.groups) {
      for (ir::ValueId id : group.nodes) group_of[id] = &group;
    }
    std::vector<std::set<ir::ValueId>> readers(graph_.size());
    for (const ir::Value& value : graph_) {
      for (const ir::NodeRef& ref : passes::TensorInputs(value)) readers[ref.value].insert(value.id);
    }
    auto is_view = [&](const ir::Value& value) { return passes::IsMetadataView(value) && passes::TensorInputs(value).size() == 1; };
    for (const ir::Mutation& mutation : graph_.mutations()) {
      const ir::ParameterValue* state = graph_.FindTarget(mutation.target);
      if (state == nullptr || state->parameter_kind != ir::ParameterKind::kBuffer || !state->type().is_contiguous() ||
          ReadsOverwrittenState(graph_, mutation) || !(*graph_.TypeOf(mutation.value) == state->type())) {
        continue;
      }
      // The kernel's output the new value views.
      ir::NodeRef output = mutation.value;
      while (is_view(graph_.value(output.value))) output = passes::TensorInputs(graph_.value(output.value)).front();
      auto group = group_of.find(output.value);
      if (group == group_of.end()) continue;
      const std::string& name = group->second->name;
      if (options_.substitutes.count(name) || !(kernels_.count(name) || emitted_.count(name))) continue;
      if (emitted_.count(name)) {
        // One launch, not autotuned: a split reduction's two kernels, or an autotuned kernel's
        // measuring runs, would read the buffer after a launch wrote it.
        const EmittedKernel& kernel = emitted_.at(name);
        const auto launches = std::count_if(kernel.launch.begin(), kernel.launch.end(),
                                            [](const std::string& line) { return line.find("](") != std::string::npos; });
        if (launches != 1 || kernel.repeats != 1 || kernel.source.find("@triton.autotune") != std::string::npos) continue;
      }
      bool returned = false;
      for (const ir::NodeRef& out : graph_.outputs()) {
        for (ir::NodeRef at = out;; at = passes::TensorInputs(graph_.value(at.value)).front()) {
          returned = returned || at.value == output.value;
          if (!is_view(graph_.value(at.value))) break;
        }
      }
      // The buffer's readers, and the tensor with the output's type that is the buffer's memory.
      auto elementwise_in_group = [&](ir::ValueId reader, const ir::Shape& shape) {
        const ir::Value& op = graph_.value(reader);
        return group_of[reader] == group->second && passes::IsFusablePointwise(graph_, op) && op.type().shape == shape;
      };
      const ir::TensorType& output_type = *graph_.TypeOf(output);
      std::optional<std::string> memory;
      if (output_type == state->type()) memory = VarName(graph_, state->ref());
      bool elementwise = !readers[state->id].empty() && output_type.is_contiguous();
      for (ir::ValueId reader : readers[state->id]) {
        const ir::Value& value = graph_.value(reader);
        if (!is_view(value)) {
          elementwise = elementwise && elementwise_in_group(reader, state->type().shape);
          continue;
        }
        if (!value.type().is_contiguous() || readers[reader].empty()) elementwise = false;
        for (ir::ValueId next : readers[reader]) elementwise = elementwise && elementwise_in_group(next, value.type().shape);
        if (value.type() == output_type) memory = VarName(graph_, value.ref());
      }
      if (returned || !elementwise || !memory) continue;
      in_place_[VarName(graph_, output)] = *memory;
      written_in_place_.insert(mutation.target);
    }
  }

  // A kernel's launch line, its allocations made views of the memory their values are written in:
  // a slice of a concatenation, or the buffer of a state updated in place.
  void EmitAllocationOrLaunch(const std::string& line) {
    if (std::optional<std::vector<std::string>> lines = concatenations_->Allocation(line)) {
      for (const std::string& written : *lines) out_.Line(written);
      return;
    }
    out_.Line(InPlace(line));
  }

  // `line`, with an allocation of a value written in place made the buffer itself.
  std::string InPlace(const std::string& line) const {
    for (const auto& [value, buffer] : in_place_) {
      if (line.rfind(value + " = torch.empty(", 0) == 0 || line.rfind(value + " = torch.empty_strided(", 0) == 0) {
        return fmt::format("{} = {}  # written in place", value, buffer);
      }
    }
    return line;
  }

  // The variable each mutation's target is copied from, by target: its new value, or a copy made
  // here of a new value that is state another copy overwrites.
  std::map<std::string, std::string> EmitCopiesAside() {
    std::map<std::string, std::string> sources;
    for (const ir::Mutation& mutation : graph_.mutations()) {
      std::string source = VarName(graph_, mutation.value);
      if (ReadsOverwrittenState(graph_, mutation)) {
        out_.Line(fmt::format("kf_old_{0} = {0}.clone()", source));
        source = "kf_old_" + source;
      }
      sources[mutation.target] = source;
    }
    return sources;
  }

  void EmitLaunch(const passes::FusionGroup& group, const PointwiseKernel& kernel) {
    std::vector<std::string> nodes;
    for (ir::ValueId id : group.nodes) nodes.push_back("%" + graph_.value(id).name);
    out_.Line(fmt::format("# pointwise {}: {} -> one Triton kernel", group.name, fmt::join(nodes, ", ")));
    std::vector<std::string> args;
    for (const ir::NodeRef& ref : kernel.inputs) args.push_back(VarName(graph_, ref));
    for (const ir::NodeRef& ref : kernel.outputs) {
      const ir::TensorType& type = *graph_.TypeOf(ref);
      EmitAllocationOrLaunch(EmptyLike(VarName(graph_, ref), type));
      args.push_back(VarName(graph_, ref));
    }
    int64_t numel = 1;
    for (int64_t dim : kernel.shape) numel *= dim;
    args.push_back(std::to_string(numel));
    if (kernel.uses_sizes) {
      for (int64_t dim : kernel.shape) args.push_back(std::to_string(dim));
    }
    args.push_back("BLOCK_SIZE=BLOCK_SIZE");
    out_.Line(fmt::format("{}[(triton.cdiv({}, BLOCK_SIZE),)]({})", kernel.name, numel, fmt::join(args, ", ")));
  }

  void EmitSubstituteCall(const passes::FusionGroup& group, const GroupSubstitute& substitute) {
    std::vector<std::string> args, results;
    for (const ir::NodeRef& ref : substitute.inputs) args.push_back(VarName(graph_, ref) + ".contiguous()");
    for (const ir::NodeRef& ref : substitute.outputs) results.push_back(VarName(graph_, ref));
    out_.Line(fmt::format("# {} {}: the module written for it alone", ToString(group.kind), group.name));
    out_.Line(fmt::format("{} = self.kf_{}({})", fmt::join(results, ", "), group.name, fmt::join(args, ", ")));
  }

  void EmitAtenCall(const ir::OpNode& op) {
    out_.Line(AtenCallLine(op, [this](ir::NodeRef ref) { return VarName(graph_, ref); }));
  }

  const ir::Graph& graph_;
  const passes::FusionPlan& plan_;
  const ModelWriterOptions& options_;
  const AttentionProducts attention_products_;  // ProductsFeedingAttention
  // Theirs: dot_precision from attention_input_dot_precision (q's and k's products) and
  // attention_value_dot_precision (v's alone).
  const KernelOptions score_input_options_, value_input_options_;
  std::string class_name_;
  bool replay_ = false;
  SourceWriter out_;
  std::map<std::string, PointwiseKernel> kernels_;
  std::map<std::string, EmittedKernel> emitted_;
  std::map<std::string, std::string> fallback_reason_;
  std::map<std::string, std::string> in_place_;  // a kernel output's variable -> the buffer memory it is
  std::set<std::string> written_in_place_;        // mutation targets whose kernel writes them
  std::optional<ConcatenationWriter> concatenations_;  // made for each forward written
  std::map<std::string, std::string> kernel_by_identity_;  // canonical source -> the kernel emitted for it
};

}  // namespace

Result<GraphModule> WriteGraphModule(const ir::Graph& graph, const passes::FusionPlan& plan, const std::string& class_name,
                                     const ModelWriterOptions& options) {
  return Writer(graph, plan, options).Run(class_name);
}

void AddNotes(const GraphModule& module, WriteNotes* notes) {
  if (notes == nullptr) return;
  notes->no_kernel.insert(module.no_kernel.begin(), module.no_kernel.end());
  notes->replay_undecided = notes->replay_undecided || module.replay_undecided;
  for (const CudaTuning& tuning : module.cuda_tuning) {
    const auto same_key = [&](const CudaTuning& known) { return known.key == tuning.key; };
    if (std::none_of(notes->cuda_tuning.begin(), notes->cuda_tuning.end(), same_key)) notes->cuda_tuning.push_back(tuning);
  }
}

void WriteFileHeader(SourceWriter& out, const std::vector<std::string>& comments, const std::set<std::string>& helpers,
                     int block_size) {
  for (const std::string& comment : comments) out.Line("# " + comment);
  out.Line("import torch");
  out.Line("import torch.nn as nn");
  out.Line("import triton");
  out.Line("import triton.language as tl");
  out.Blank();
  out.Line(fmt::format("BLOCK_SIZE = {}", block_size));
  out.Blank();
  out.Blank();
  EmitPointwiseHelpers(helpers, out);
  EmitLayoutHelpers(helpers, out);
  if (helpers.count(kCudaKernelHelper)) EmitCudaKernelHelper(out);
  if (helpers.count(kGraphReplayHelper)) EmitGraphReplayHelper(out);
}

Result<std::string> WriteModelNew(const ir::Graph& graph, const passes::FusionPlan& plan,
                                  const ModelWriterOptions& options, WriteNotes* notes) {
  ASSIGN_OR_RETURN(GraphModule module, WriteGraphModule(graph, plan, "ModelNew", options));
  AddNotes(module, notes);
  SourceWriter out;
  WriteFileHeader(out,
                  {fmt::format("Generated by kforge from {}. Do not edit: regenerate instead.", graph.name()),
                   module.helpers.count(kCudaKernelHelper)
                       ? "Fusion groups run as the kernels below (Triton, and CUDA C++ compiled by NVRTC); views and any op without a kernel call ATen."
                       : "Fusion groups run as the Triton kernels below; views and any op without a kernel call ATen."},
                  module.helpers, options.block_size);
  out.Lines(module.definitions);
  out.Lines(module.module_class);
  return out.text();
}

}  // namespace kforge::codegen
