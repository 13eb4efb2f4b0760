#include "compiler/codegen/triton_attention.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/attention_node.h"
#include "compiler/codegen/cuda_attention.h"
#include "compiler/codegen/epilogue.h"
#include "compiler/codegen/gemm_tiles.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/codegen/tile_expression.h"

namespace kforge::codegen {
namespace {

constexpr char kKernelPrefix[] = "attention_";

// A head dim's columns as power-of-two parts (tl.arange's and tl.dot's sizes), largest first:
// 96 = 64 + 32 loads and multiplies 96 columns where one padded part would take 128. The dim is
// rounded up to tl.dot's smallest side (16), so a last part may reach past it (masked); more than
// three parts would be more dots than the padding costs, so those take one padded part.
struct HeadPart {
  int64_t offset = 0, size = 0;
  bool masked = false;  // reaches past the dim
};

std::vector<HeadPart> HeadParts(int64_t dim) {
  const int64_t padded = NextPowerOfTwo(dim, 16);
  const int64_t rounded = (dim + 15) / 16 * 16;
  std::vector<HeadPart> parts;
  int64_t offset = 0;
  for (int64_t size = padded; offset < rounded; size /= 2) {
    if (offset + size > rounded) continue;
    parts.push_back({offset, size, offset + size > dim});
    offset += size;
  }
  if (parts.size() > 3) return {{0, padded, padded > dim}};
  return parts;
}

// "base + b * s0 + h * s1" for a tensor's batch dims.
std::string BatchOffset(const ir::TensorType& type, size_t rank) {
  if (rank == 4) return Sum({Term("kf_b", type.stride[0]), Term("kf_h", type.stride[1])});
  return Sum({Term("kf_b", type.stride[0])});
}

std::string Mask(const std::vector<std::string>& parts) {
  std::vector<std::string> kept;
  for (const std::string& part : parts) {
    if (!part.empty()) kept.push_back(part);
  }
  return fmt::format("{}", fmt::join(kept, " & "));
}

// Writes the kernel body: the query block, the key loop, the normalization and the store.
class AttentionWriter {
 public:
  AttentionWriter(const ir::Graph& graph, const passes::FusionGroup& group, const AttentionNode& a, const KernelOptions& options,
                  SourceWriter& out, std::set<std::string>& helpers)
      : graph_(graph), group_(group), a_(a), options_(options), out_(out), helpers_(helpers) {}

  Status Write() {
    WriteQueries();
    out_.Line("kf_row_max = tl.full([BLOCK_M], float(\"-inf\"), tl.float32)");
    out_.Line("kf_row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)");
    for (size_t i = 0; i < v_parts_.size(); ++i) {
      out_.Line(fmt::format("kf_acc{} = tl.zeros([BLOCK_M, {}], dtype=tl.float32)", i, v_parts_[i].size));
    }
    if (a_.attributes.causal) {
      out_.Line("# Keys past the block's last diagonal are masked for every row: the loop stops before them.");
      out_.Line(fmt::format("kf_keys_end = tl.minimum({}, tl.maximum((kf_pid_m + 1) * BLOCK_M + {}, 0))", a_.tk, *a_.attributes.causal));
    }
    out_.Open(fmt::format("for kf_start in range(0, {}, BLOCK_N):", a_.attributes.causal ? "kf_keys_end" : std::to_string(a_.tk)));
    out_.Line("kf_n = kf_start + tl.arange(0, BLOCK_N)");
    out_.Line(fmt::format("kf_n_valid = kf_n < {}", a_.tk));
    ASSIGN_OR_RETURN(std::optional<std::string> bias, WriteBias());
    std::vector<std::string> keep = {"kf_n_valid[None, :]"};
    if (a_.attributes.causal) keep.push_back(fmt::format("(kf_n[None, :] - kf_m[:, None] <= {})", *a_.attributes.causal));
    const bool skips = bias && MaskLikeBias();
    if (skips) keep.push_back(fmt::format("({} != float(\"-inf\"))", *bias));
    out_.Line(fmt::format("kf_keep = {}", Mask(keep)));
    if (skips) {
      out_.Line("# A mask can leave a whole tile empty (a causal mask from a buffer): skip its loads and products.");
      out_.Open("if tl.max(kf_keep.to(tl.int32)) > 0:");
    }
    WriteStep(bias);
    if (skips) out_.Close();
    out_.Close();
    WriteOutput();
    return Status::Ok();
  }

 private:
  std::string Ptr(ir::NodeRef ref) const { return VarName(graph_, ref) + "_ptr"; }
  const ir::TensorType& Type(ir::NodeRef ref) const { return *graph_.TypeOf(ref); }
  // "kf_d1[None, :]" with its mask "(kf_d1[None, :] < 100)" when the part reaches past `dim`.
  static std::string Columns(const char* name, size_t part, const char* broadcast) {
    return fmt::format("{}{}{}", name, part, broadcast);
  }
  static std::string HeadMask(const std::string& index, const HeadPart& part, int64_t dim) {
    return part.masked ? fmt::format("({} < {})", index, dim) : "";
  }
  std::string Dot(const std::string& a, const std::string& b) const {
    return fmt::format("tl.dot({}, {}, input_precision=\"{}\")", a, b, options_.attention_precision());
  }

  void WriteQueries() {
    const size_t r = a_.rank - 2;
    out_.Line("kf_pid_m = tl.program_id(0)");
    out_.Line("kf_batch = tl.program_id(1).to(tl.int64)");
    if (a_.rank == 4) {
      out_.Line(fmt::format("kf_b = kf_batch // {}", a_.heads));
      out_.Line(fmt::format("kf_h = kf_batch % {}", a_.heads));
    } else {
      out_.Line("kf_b = kf_batch");
    }
    out_.Line("kf_m = kf_pid_m * BLOCK_M + tl.arange(0, BLOCK_M)");
    out_.Line(fmt::format("kf_m_valid = kf_m < {}", a_.tq));
    for (size_t i = 0; i < q_parts_.size(); ++i) {
      out_.Line(fmt::format("kf_d{} = {}tl.arange(0, {})", i, q_parts_[i].offset ? fmt::format("{} + ", q_parts_[i].offset) : "",
                            q_parts_[i].size));
    }
    for (size_t i = 0; i < v_parts_.size(); ++i) {
      out_.Line(fmt::format("kf_e{} = {}tl.arange(0, {})", i, v_parts_[i].offset ? fmt::format("{} + ", v_parts_[i].offset) : "",
                            v_parts_[i].size));
    }
    const ir::TensorType& q = Type(a_.q);
    for (size_t i = 0; i < q_parts_.size(); ++i) {
      const std::string d = Columns("kf_d", i, "[None, :]");
      out_.Line(fmt::format("kf_q{} = tl.load({} + {}, mask={}, other=0.0){}", i, Ptr(a_.q),
                            Sum({BatchOffset(q, a_.rank), Term("kf_m[:, None]", q.stride[r]), Term(d, q.stride[r + 1])}),
                            Mask({"kf_m_valid[:, None]", HeadMask(d, q_parts_[i], a_.d)}),
                            a_.attributes.q_scale != 1.0 ? " * " + FloatLiteral(a_.attributes.q_scale) : ""));
    }
  }

  // The bias at this tile (its producers computed here), or nullopt without one.
  Result<std::optional<std::string>> WriteBias() {
    if (!a_.bias) return std::optional<std::string>();
    std::set<ir::ValueId> computed(group_.nodes.begin(), group_.nodes.end());
    computed.erase(a_.node->id);
    TileExpressions tiles(graph_, computed, TileMasks{"kf_m_valid[:, None]", "kf_n_valid[None, :]"}, out_, helpers_);
    const ir::Shape& scores = graph_.TypeOf(*a_.bias)->shape;
    ir::Shape plane = Type(a_.q).shape;
    plane.back() = a_.tk;
    TileIndex index;
    if (a_.rank == 4) index.push_back({IndexDigit{"kf_b", plane[0], {}}});
    if (a_.rank == 4) index.push_back({IndexDigit{"kf_h", plane[1], {}}});
    if (a_.rank == 3) index.push_back({IndexDigit{"kf_b", plane[0], {}}});
    index.push_back({IndexDigit{"kf_m[:, None]", a_.tq, {true, false}}});
    index.push_back({IndexDigit{"kf_n[None, :]", a_.tk, {false, true}}});
    ASSIGN_OR_RETURN(TileValue bias, tiles.At(*a_.bias, TileExpressions::Broadcast(scores, plane, index)));
    return std::optional<std::string>(bias.var);
  }

  // Whether the bias is made from a mask (a boolean value among its producers), which may leave
  // whole tiles empty; a learned bias never does, and a branch would keep the loop's loads from
  // being pipelined.
  bool MaskLikeBias() const {
    for (ir::ValueId id : group_.nodes) {
      if (id != a_.node->id && graph_.value(id).type().dtype == ir::DType::kBool) return true;
    }
    const ir::TensorType& bias = Type(*a_.bias);
    return bias.dtype == ir::DType::kBool;
  }

  // One key block: scores, the online softmax update, and the product with v.
  void WriteStep(const std::optional<std::string>& bias) {
    const size_t r = a_.rank - 2;
    const ir::TensorType &k = Type(a_.k), &v = Type(a_.v);
    std::vector<std::string> products;
    for (size_t i = 0; i < q_parts_.size(); ++i) {
      const std::string d = Columns("kf_d", i, "[:, None]");
      out_.Line(fmt::format("kf_kt{} = tl.load({} + {}, mask={}, other=0.0)", i, Ptr(a_.k),
                            Sum({BatchOffset(k, a_.rank), Term("kf_n[None, :]", k.stride[r]), Term(d, k.stride[r + 1])}),
                            Mask({HeadMask(d, q_parts_[i], a_.d), "kf_n_valid[None, :]"})));
      products.push_back(Dot(fmt::format("kf_q{}", i), fmt::format("kf_kt{}", i)));
    }
    std::string scores = fmt::format("{} * {}", products.size() == 1 ? products[0] : "(" + fmt::format("{}", fmt::join(products, " + ")) + ")",
                                     FloatLiteral(a_.attributes.scale));
    if (bias) scores += " + " + *bias;
    out_.Line(fmt::format("kf_scores = tl.where(kf_keep, {}, float(\"-inf\"))", scores));
    out_.Line("kf_new_max = tl.maximum(kf_row_max, tl.max(kf_scores, 1))");
    out_.Line("# A row with every score so far masked exponentiates against 0, giving 0 and not NaN.");
    out_.Line("kf_shift = tl.where(kf_new_max == float(\"-inf\"), 0.0, kf_new_max)");
    out_.Line("kf_p = tl.exp(kf_scores - kf_shift[:, None])");
    out_.Line("kf_rescale = tl.exp(kf_row_max - kf_shift)");
    out_.Line("kf_row_sum = kf_row_sum * kf_rescale + tl.sum(kf_p, 1)");
    for (size_t i = 0; i < v_parts_.size(); ++i) {
      const std::string e = Columns("kf_e", i, "[None, :]");
      out_.Line(fmt::format("kf_v{} = tl.load({} + {}, mask={}, other=0.0)", i, Ptr(a_.v),
                            Sum({BatchOffset(v, a_.rank), Term("kf_n[:, None]", v.stride[r]), Term(e, v.stride[r + 1])}),
                            Mask({"kf_n_valid[:, None]", HeadMask(e, v_parts_[i], a_.dv)})));
      out_.Line(fmt::format("kf_acc{0} = kf_acc{0} * kf_rescale[:, None] + {1}", i, Dot("kf_p", fmt::format("kf_v{}", i))));
    }
    out_.Line("kf_row_max = kf_new_max");
  }

  void WriteOutput() {
    const size_t r = a_.rank - 2;
    const ir::NodeRef out = a_.node->ref();
    const ir::TensorType& type = Type(out);
    if (a_.attributes.zero_empty_rows) {
      out_.Line("# A row whose every score is masked gives zeros (SDPA's fix-up of softmax's NaN).");
      out_.Line("kf_empty = kf_row_max == float(\"-inf\")");
    } else {
      out_.Line("# A row whose every score is masked gives 0 / 0 = NaN, as softmax does.");
    }
    for (size_t i = 0; i < v_parts_.size(); ++i) {
      const std::string e = Columns("kf_e", i, "[None, :]");
      const std::string value = fmt::format("kf_acc{} / kf_row_sum[:, None]", i);
      out_.Line(fmt::format("tl.store({} + {}, {}, mask={})", Ptr(out),
                            Sum({BatchOffset(type, a_.rank), Term("kf_m[:, None]", type.stride[r]), Term(e, type.stride[r + 1])}),
                            a_.attributes.zero_empty_rows ? fmt::format("tl.where(kf_empty[:, None], 0.0, {})", value) : value,
                            Mask({"kf_m_valid[:, None]", HeadMask(e, v_parts_[i], a_.dv)})));
    }
  }

  const ir::Graph& graph_;
  const passes::FusionGroup& group_;
  const AttentionNode& a_;
  const KernelOptions& options_;
  const std::vector<HeadPart> q_parts_ = HeadParts(a_.d), v_parts_ = HeadParts(a_.dv);
  SourceWriter& out_;
  std::set<std::string>& helpers_;
};

}  // namespace

Result<EmittedKernel> EmitAttentionKernel(const ir::Graph& graph, const passes::FusionGroup& group, const KernelOptions& options) {
  if (options.cuda_ieee_kernels && options.attention_precision() == "ieee") {
    if (std::optional<EmittedKernel> kernel = EmitCudaAttentionKernel(graph, group, options)) return *std::move(kernel);
  }
  const auto& node = graph.value(group.nodes.back()).As<ir::OpNode>();
  ASSIGN_OR_RETURN(AttentionNode a, ReadAttentionNode(graph, node));
  EmittedKernel kernel;
  kernel.name = kKernelPrefix + group.name;
  const std::vector<ir::NodeRef> inputs = passes::GroupInputs(graph, group);
  std::vector<std::string> params;
  for (const ir::NodeRef& ref : inputs) params.push_back(VarName(graph, ref) + "_ptr");
  params.push_back(VarName(graph, node.ref()) + "_ptr");
  params.push_back("BLOCK_M: tl.constexpr");
  params.push_back("BLOCK_N: tl.constexpr");

  SourceWriter out;
  OpenKernel(out, kernel.name, params, graph, group);
  out.Line(fmt::format("# softmax({} @ k^T * {}{}) @ v for {} heads of {} queries and {} keys, head dims {} (q, k) and {} (v);",
                       a.attributes.q_scale != 1.0 ? "(q * " + FloatLiteral(a.attributes.q_scale) + ")" : "q", FloatLiteral(a.attributes.scale),
                       a.bias ? " + bias" : "", a.problems(), a.tq, a.tk, a.d, a.dv));
  out.Line(fmt::format("# {}online softmax over key blocks; tl.dot with input_precision=\"{}\".",
                       a.attributes.causal ? fmt::format("causal (key j kept for query i when j - i <= {}); ", *a.attributes.causal) : "",
                       options.attention_precision()));
  AttentionWriter writer(graph, group, a, options, out, kernel.helpers);
  RETURN_IF_ERROR(writer.Write());
  out.Close();
  const std::optional<TileChoice> config =
      FinishGemmKernel(kernel, out.text(), kAttentionTileConfigs, options, TileParameters{.k_and_group = false});

  std::vector<std::string> args;
  for (const ir::NodeRef& ref : inputs) args.push_back(VarName(graph, ref));
  const std::string result = VarName(graph, node.ref());
  kernel.launch.push_back(EmptyLike(result, node.type()));
  args.push_back(result);
  if (!config) {
    kernel.launch.push_back(fmt::format("{}[lambda meta: (triton.cdiv({}, meta[\"BLOCK_M\"]), {})]({})", kernel.name, a.tq,
                                        a.problems(), fmt::join(args, ", ")));
    return kernel;
  }
  args.push_back(fmt::format("BLOCK_M={}, BLOCK_N={}, num_warps={}, num_stages={}", config->block_m, config->block_n,
                             config->warps, config->stages));
  kernel.launch.push_back(fmt::format("{}[({}, {})]({})", kernel.name, (a.tq + config->block_m - 1) / config->block_m, a.problems(),
                                      fmt::join(args, ", ")));
  return kernel;
}

bool HasAttentionKernel(const std::string& source) {
  return source.find(std::string("def ") + kKernelPrefix) != std::string::npos ||
         source.find(std::string("KfCudaKernel(\"") + kKernelPrefix) != std::string::npos;
}

}  // namespace kforge::codegen
