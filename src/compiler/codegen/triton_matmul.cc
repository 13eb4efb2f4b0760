#include "compiler/codegen/triton_matmul.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/cuda_matmul.h"
#include "compiler/codegen/epilogue.h"
#include "compiler/codegen/gemm_tiles.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/codegen/triton_conv.h"
#include "compiler/codegen/triton_direct_conv.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::codegen {
namespace {

Result<EmittedKernel> EmitMm(const ir::Graph& graph, const passes::FusionGroup& group, const KernelOptions& options) {
  const auto& anchor = graph.value(group.nodes.front()).As<ir::OpNode>();
  const ir::NodeRef a = anchor.args[0].As<ir::NodeRef>(), b = anchor.args[1].As<ir::NodeRef>();
  const ir::TensorType &a_type = *graph.TypeOf(a), &b_type = *graph.TypeOf(b);
  const ir::Shape& out_shape = anchor.type().shape;
  const size_t rank = out_shape.size();
  const size_t r = rank - 2;  // the first matrix dim; the dims before it are batch dims
  const bool batched = r > 0;
  const std::vector<int64_t>& sa = a_type.stride;
  const std::vector<int64_t>& sb = b_type.stride;
  const auto [row, batch_dims, b_batch] = ProductLayout(out_shape, sb);  // M's dim may be a batch dim B is broadcast along
  const int64_t m = out_shape[row], n = out_shape[r + 1], k = a_type.shape[r + 1];
  int64_t batch = 1;
  for (size_t d : batch_dims) batch *= out_shape[d];

  EmittedKernel kernel;
  kernel.name = "matmul_" + group.name;
  ASSIGN_OR_RETURN(std::vector<ir::NodeRef> inputs, EpilogueInputs(graph, group, {a, b}, out_shape));
  std::vector<ir::NodeRef> outputs = passes::GroupOutputs(graph, group);
  std::vector<std::string> params = {"kf_a_ptr", "kf_b_ptr"};
  for (const ir::NodeRef& ref : inputs) params.push_back(VarName(graph, ref) + "_ptr");
  for (const ir::NodeRef& ref : outputs) params.push_back(VarName(graph, ref) + "_ptr");

  // A product of a few K steps (Mamba2's chunk recurrence: 3 x 3 by 3 x 1024, 16384 times) is K
  // exact fp32 FMAs per output, in tiles as short as its M: a tensor-core dot would pad K to 16
  // and M to 16, and three-pass TF32 would triple that.
  const bool by_fma = k <= kMaxFmaK;
  const std::vector<TileChoice> space =
      by_fma ? FmaTileSpace(m)
             : WithSplitK(MatmulTileSpace(m, options.dot_precision), m, n, batch,
                          [&](int block_k) { return (k + block_k - 1) / block_k; }, options);
  const TileParameters parameters{.split_k = HasSplitK(space)};
  const bool split = parameters.split_k;

  SourceWriter out;
  OpenGemmKernel(out, kernel.name, params, graph, group, parameters);
  out.Line(fmt::format("# {}{} x {} x {} (M x N x K); {}.", batched ? fmt::format("{} batches of ", batch) : "", m, n, k,
                       by_fma ? "one fp32 FMA per K step" : fmt::format("tl.dot with input_precision=\"{}\"", options.dot_precision)));
  EmitTilePosition(out, m, n);
  out.Line(batched ? "kf_batch = tl.program_id(1).to(tl.int64)" : "kf_batch = 0");
  // Each batch dim's index (one dim: the program's batch itself), and the operands' offsets; the
  // output's index along each of its dims.
  std::vector<std::string> index(rank);
  std::vector<std::string> a_terms, b_terms;
  int64_t inner = 1;
  for (size_t i = r; i-- > 0;) {
    const size_t d = batch_dims[i];
    std::string name = r == 1 ? "kf_batch" : fmt::format("kf_b{}", d);
    if (r > 1) {
      std::string value = inner == 1 ? "kf_batch" : fmt::format("(kf_batch // {})", inner);
      if (i > 0) value = fmt::format("{} % {}", value, out_shape[d]);
      out.Line(fmt::format("{} = {}", name, value));
    }
    inner *= out_shape[d];
    index[d] = name;
    a_terms.push_back(Term(name, sa[d]));
    b_terms.push_back(Term(name, b_batch[i]));
  }
  index[row] = "kf_m[:, None]";
  index[r + 1] = "kf_n[None, :]";
  if (by_fma) {
    // Written even for a stride of 0 (a broadcast dim), so each pointer stays a block.
    a_terms.push_back(fmt::format("kf_m * {}", sa[row]));
    b_terms.push_back(fmt::format("kf_n * {}", sb[r + 1]));
    out.Line(fmt::format("kf_a = kf_a_ptr + {}", Sum(a_terms)));
    out.Line(fmt::format("kf_b = kf_b_ptr + {}", Sum(b_terms)));
    out.Line("kf_acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)");
    out.Open(fmt::format("for kf_k in tl.static_range({}):", k));
    out.Line(fmt::format("kf_a_col = tl.load(kf_a + kf_k * {}, mask=kf_m < {}, other=0.0)", sa[r + 1], m));
    out.Line(fmt::format("kf_b_row = tl.load(kf_b + kf_k * {}, mask=kf_n < {}, other=0.0)", sb[r], n));
    out.Line("kf_acc += kf_a_col[:, None] * kf_b_row[None, :]");
    out.Close();
  } else {
    out.Line("kf_kk = tl.arange(0, BLOCK_K)");
    // An operand whose rows are contiguous along K (a transposed view: B = W.T of a linear layer)
    // is loaded K-fastest and transposed in registers, so each load is coalesced.
    const bool a_k_major = sa[row] == 1 && sa[r + 1] != 1, b_k_major = sb[r] == 1 && sb[r + 1] != 1;
    a_terms.push_back(Term(a_k_major ? "kf_m[None, :]" : "kf_m[:, None]", sa[row]));
    a_terms.push_back(Term(a_k_major ? "kf_kk[:, None]" : "kf_kk[None, :]", sa[r + 1]));
    b_terms.push_back(Term(b_k_major ? "kf_kk[None, :]" : "kf_kk[:, None]", sb[r]));
    b_terms.push_back(Term(b_k_major ? "kf_n[:, None]" : "kf_n[None, :]", sb[r + 1]));
    out.Line(fmt::format("kf_a = kf_a_ptr + {}", Sum(a_terms)));
    out.Line(fmt::format("kf_b = kf_b_ptr + {}", Sum(b_terms)));
    out.Line("kf_acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)");
    OpenAccumulation(out, split, m, n);
    const std::string slices = EmitKSliceRange(out, k, split);
    if (split) {
      // This part's K slices: its operands start at its first.
      out.Line(fmt::format("kf_a += kf_lo * BLOCK_K * {}", sa[r + 1]));
      out.Line(fmt::format("kf_b += kf_lo * BLOCK_K * {}", sb[r]));
    }
    out.Open(fmt::format("for kf_k0 in range({}):", slices));
    if (a_k_major) {
      out.Line(fmt::format("kf_a_tile = tl.trans(tl.load(kf_a, mask=(kf_m[None, :] < {}) & (kf_kk[:, None] < {} - kf_k0), other=0.0))", m, k));
    } else {
      out.Line(fmt::format("kf_a_tile = tl.load(kf_a, mask=(kf_m[:, None] < {}) & (kf_kk[None, :] < {} - kf_k0), other=0.0)", m, k));
    }
    if (b_k_major) {
      out.Line(fmt::format("kf_b_tile = tl.trans(tl.load(kf_b, mask=(kf_kk[None, :] < {} - kf_k0) & (kf_n[:, None] < {}), other=0.0))", k, n));
    } else {
      out.Line(fmt::format("kf_b_tile = tl.load(kf_b, mask=(kf_kk[:, None] < {} - kf_k0) & (kf_n[None, :] < {}), other=0.0)", k, n));
    }
    out.Line(fmt::format("kf_acc = tl.dot(kf_a_tile, kf_b_tile, kf_acc, input_precision=\"{}\")", options.dot_precision));
    out.Line(fmt::format("kf_a += BLOCK_K * {}", sa[r + 1]));
    out.Line(fmt::format("kf_b += BLOCK_K * {}", sb[r]));
    out.Close();
    CloseAccumulation(out, split);
  }
  out.Line(fmt::format("kf_mask = (kf_m[:, None] < {}) & (kf_n[None, :] < {})", m, n));
  OpenEpilogue(out, split);
  out.Line(fmt::format("{} = kf_acc", VarName(graph, anchor.ref())));
  RETURN_IF_ERROR(EmitEpilogue(out, graph, group, inputs, outputs, out_shape, index, kernel));
  CloseEpilogue(out, split, m, n);
  out.Close();
  const std::optional<TileChoice> config =
      FinishGemmKernel(kernel, out.text(), space, options, parameters, by_fma ? space.front() : kFixedTile);

  std::vector<std::string> args = {VarName(graph, a), VarName(graph, b)};
  for (const ir::NodeRef& ref : inputs) args.push_back(VarName(graph, ref));
  EmitGemmLaunch(kernel, graph, args, outputs, config, m, n, batch, parameters, space);
  return kernel;
}

}  // namespace

Result<EmittedKernel> EmitMatmulKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                       const KernelOptions& options) {
  const ir::Value& anchor = graph.value(group.nodes.front());
  if (!passes::IsFusableMatmul(graph, anchor)) return Status::InvalidArgument(fmt::format("%{}: not a matmul", anchor.name));
  if (anchor.As<ir::OpNode>().op == "aten.convolution.default") {
    const ir::OpNode& conv = anchor.As<ir::OpNode>();
    // A plain convolution's direct form is the implicit-GEMM kernel's (it shares the tiling).
    if (PrefersDirectConvolution(graph, conv) && conv.args[6].As<bool>()) return EmitDirectTransposedConvolution(graph, group);
    return EmitImplicitGemmConvolution(graph, group, options);
  }
  if (options.cuda_ieee_kernels && options.dot_precision == "ieee") {
    if (std::optional<EmittedKernel> kernel = EmitCudaMatmulKernel(graph, group, options)) return *std::move(kernel);
  }
  return EmitMm(graph, group, options);
}

}  // namespace kforge::codegen
