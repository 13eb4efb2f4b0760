#include "compiler/codegen/triton_reduction.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/codegen/triton_pointwise.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::codegen {
namespace {

using passes::ReductionSpace;

enum class Space { kFull, kKept };

bool Contains(const std::vector<int64_t>& list, int64_t x) { return std::find(list.begin(), list.end(), x) != list.end(); }

// "a * 3 + b * 7" from index variables and strides, skipping zero strides; "0" when empty.
std::string Offset(const std::vector<std::pair<std::string, int64_t>>& terms) {
  std::vector<std::string> parts;
  for (const auto& [index, stride] : terms) {
    if (stride == 0) continue;
    parts.push_back(stride == 1 ? index : fmt::format("{} * {}", index, stride));
  }
  return parts.empty() ? "0" : fmt::format("{}", fmt::join(parts, " + "));
}

// Rows at least this long are folded in blocks of 8192 (16 warps), shorter folded ones in 4096.
constexpr int64_t kWideRow = 65536;

// Rows of at most kMaxShortRow elements along the innermost dim are held kShortRowTile elements
// (several rows) per program.
constexpr int64_t kMaxShortRow = 256;
constexpr int64_t kShortRowTile = 4096;

// Fewest neighbouring kept elements worth a column-mode program for a scan or max.dim.
constexpr int64_t kMinIndexColumns = 4;

std::vector<TileChoice> BlockSpace(const std::vector<std::tuple<int, int, int>>& choices) {
  std::vector<TileChoice> space;
  for (const auto& [r_block, warps, stages] : choices) {
    TileChoice choice;
    choice.r_block = r_block;
    choice.warps = warps;
    choice.stages = stages;
    space.push_back(choice);
  }
  return space;
}

// The configurations a row folded in one program is autotuned over (R_BLOCK, warps, stages):
// blocks of 1024 to 8192 elements, 2 to 8 of them per thread, loads pipelined or not. The fixed
// rule (8192 or 4096 by row length, block / 512 warps) reached 2.2 TB/s in group norm's
// statistics-and-normalize kernel on the H100, where torch.compile's kernels reached 2.9
// (bench/RESULTS.md).
const std::vector<TileChoice> kFoldedRowSpace = BlockSpace(
    {{1024, 4, 1}, {2048, 4, 1}, {2048, 8, 1}, {4096, 8, 1}, {4096, 16, 1}, {8192, 8, 1}, {8192, 16, 1},
     {2048, 4, 3}, {4096, 8, 3}, {8192, 16, 3}});
// A split row's partial kernel (each program folds a slice, a multiple of 2048 elements): blocks
// that divide every slice.
const std::vector<TileChoice> kSplitSliceSpace =
    BlockSpace({{1024, 4, 1}, {2048, 4, 1}, {2048, 8, 1}, {2048, 16, 1}, {1024, 4, 3}, {2048, 8, 3}});

// The kernel's source under @triton.autotune over `space` (or with a configuration options.tuned
// holds) and its launch's meta-parameters: R_BLOCK and num_warps/num_stages of the configuration
// baked in, or nothing for the autotuner to choose.
std::string FinishTunedBlock(EmittedKernel& kernel, const std::string& body, const std::vector<TileChoice>& space,
                             const KernelOptions& options) {
  std::vector<std::string> configs;
  for (const TileChoice& c : space) {
    configs.push_back(fmt::format("triton.Config({{\"R_BLOCK\": {}}}, num_warps={}, num_stages={})", c.r_block, c.warps, c.stages));
  }
  std::optional<TileChoice> tuned = FinishAutotunedKernel(kernel, body, configs, options);
  return tuned ? fmt::format("R_BLOCK={}, num_warps={}, num_stages={}", tuned->r_block, tuned->warps, tuned->stages) : "";
}

class ReductionEmitter {
 public:
  ReductionEmitter(const ir::Graph& graph, const passes::FusionGroup& group, const KernelOptions& options)
      : graph_(graph), group_(group), options_(options) {}

  Result<EmittedKernel> Run() {
    RETURN_IF_ERROR(FindSpace());
    RETURN_IF_ERROR(ClassifyInputs());
    RETURN_IF_ERROR(ClassifyNodes());
    outputs_ = passes::GroupOutputs(graph_, group_);
    single_ = reduced_ <= kMaxSingleBlock;
    block_ = single_ ? NextPowerOfTwo(reduced_) : 2048;
    if (space_->split() && Splittable()) {
      // Few long rows (a loss over a whole tensor): many programs fold a slice each, a second
      // kernel combines their partial results.
      split_ = true;
      single_ = false;
      const int64_t innermost = static_cast<int64_t>(space_->full.size()) - 1;
      if (innermost > 0 && !Contains(space_->dims, innermost) && space_->full.back() >= 2) {
        // The innermost dim is kept (a batch norm's channels over [rows, channels]): a slice is
        // [R_BLOCK rows, C_BLOCK neighbouring kept elements] tiles, contiguous along each row, and
        // yields C_BLOCK partial results, where a slice of one kept element read it strided
        // (NetVLAD's 48 channels: one useful float per 32-byte sector).
        cols_ = std::min<int64_t>(64, NextPowerOfTwo(space_->full.back()));
        block_ = std::max<int64_t>(kMaxSingleBlock / 4 / cols_, 8);
      }
      parts_ = std::min<int64_t>(1024, (reduced_ + 4 * block_ - 1) / (4 * block_));
      chunk_ = ((reduced_ + parts_ - 1) / parts_ + block_ - 1) / block_ * block_;
      parts_ = (reduced_ + chunk_ - 1) / chunk_;
      loop_range_ = fmt::format("kf_part * {0}, kf_part * {0} + {0}, R_BLOCK", chunk_);
      loop_start_ = fmt::format("kf_part * {}", chunk_);
    }
    const int64_t last = static_cast<int64_t>(space_->full.size()) - 1;
    if (!split_ && last > 0 && !Contains(space_->dims, last) && space_->full.back() >= 8) {
      // The innermost dim is kept: a program takes C_BLOCK neighbouring kept elements, so the
      // loads of each reduced step are contiguous (a [R_BLOCK, C_BLOCK] tile, reduced along axis 0).
      int64_t columns = std::min<int64_t>(64, NextPowerOfTwo(space_->full.back()));
      int64_t rows = NextPowerOfTwo(reduced_);
      if (rows * columns <= kMaxSingleBlock) {
        cols_ = columns;
        single_ = true;
        block_ = rows;
      } else if (!HasWholeRowOp()) {
        // Folded: wide column tiles when the kept run is long. Measured on the H200 for a max over
        // the middle dim of [128, 4096, 4095] (KernelBench level1/49): [64 x 64] tiles 3.38 ms,
        // [16 x 256] 2.70 ms; [32 x 128], [32 x 256] (8 warps) and [128 x 64] no better than 3.28 ms.
        cols_ = space_->full.back() >= 256 ? 256 : columns;
        single_ = false;
        block_ = std::max<int64_t>(kMaxSingleBlock / 4 / cols_, 8);
      } else if (rows * kMinIndexColumns <= kMaxSingleBlock) {
        // A scan or max.dim needs its whole row in registers: as many columns as fit, so each
        // reduced step still loads a contiguous run instead of one strided element.
        cols_ = std::min(columns, kMaxSingleBlock / rows);
        single_ = true;
        block_ = rows;
      }
    } else if (!split_ && single_ && last >= 0 && Contains(space_->dims, last) && reduced_ <= kMaxShortRow && kept_count_ > 1) {
      // Short rows along the innermost dim (softmax over NetVLAD's 48 clusters, 204800 rows): a
      // program takes C_BLOCK neighbouring rows as one [R_BLOCK, C_BLOCK] tile, contiguous in
      // memory, instead of one row of a few dozen elements per program.
      const int64_t rows = NextPowerOfTwo(reduced_);
      cols_ = std::min(NextPowerOfTwo(kept_count_), std::max<int64_t>(kShortRowTile / rows, 2));
      block_ = rows;
    }
    if (!single_ && !split_) {
      // Rows folded block by block: softmax's sum of exponentials joins its max's pass.
      fold_online_ = true;
      RETURN_IF_ERROR(ClassifyNodes());
      // Folded rows take wide blocks, which keep more loads in flight (block / 512 warps).
      // Measured on the H200 (bench/RESULTS.md, eighteenth session): an L2 norm over rows of 65535,
      // 10.39 ms in blocks of 2048, 8.01 ms in blocks of 4096; softmax over rows of 393216, 4.78 ms
      // in blocks of 4096, 4.61 ms in blocks of 8192.
      if (!cols_) block_ = reduced_ >= kWideRow ? 8192 : 4096;
    }
    for (ir::ValueId id : group_.nodes) {
      if (!single_ && NeedsWholeRow(graph_.value(id).As<ir::OpNode>().op)) {
        return Status::InvalidArgument(fmt::format("%{}: a scan or max.dim over rows of {} elements (at most {})",
                                                   graph_.value(id).name, reduced_, kMaxSingleBlock));
      }
    }
    EmittedKernel kernel;
    kernel.name = "reduce_" + group_.name;
    RETURN_IF_ERROR(EmitBody(kernel));
    if (split_) return kernel;
    if (!single_ && !cols_ && options_.autotune) {
      // A folded row: its block and warps are measured on the GPU (kFoldedRowSpace).
      EmitLaunch(kernel, FinishTunedBlock(kernel, kernel.source, kFoldedRowSpace, options_));
      return kernel;
    }
    int64_t tile = block_ * std::max<int64_t>(cols_, 1);
    int warps = static_cast<int>(cols_ ? std::clamp<int64_t>(tile / 1024, 2, 8) : std::clamp<int64_t>(block_ / 512, 1, 16));
    EmitLaunch(kernel, fmt::format("R_BLOCK={}{}, num_warps={}", block_, cols_ ? fmt::format(", C_BLOCK={}", cols_) : "", warps));
    return kernel;
  }

 private:
  Status FindSpace() {
    for (ir::ValueId id : group_.nodes) {
      std::optional<passes::ReductionSpace> space = passes::FusableReductionSpace(graph_, graph_.value(id));
      if (!space) space = passes::RowGatherSpace(graph_, graph_.value(id));
      if (space) {
        if (space_ && !(*space_ == *space)) {
          return Status::InvalidArgument(fmt::format("%{}: reduces another space than the group", graph_.value(id).name));
        }
        space_ = space;
      }
    }
    if (!space_) return Status::InvalidArgument("a reduction group without a reduction");
    reduced_ = space_->reduced_count();
    kept_count_ = 1;
    for (size_t d = 0; d < space_->full.size(); ++d) {
      if (Contains(space_->dims, static_cast<int64_t>(d))) continue;
      kept_dims_.push_back(static_cast<int64_t>(d));
      kept_count_ *= space_->full[d];
    }
    return Status::Ok();
  }

  std::string Name(ir::NodeRef ref) const { return VarName(graph_, ref); }

  Status ClassifyInputs() {
    for (const ir::NodeRef& ref : passes::GroupInputs(graph_, group_)) {
      const ir::TensorType& type = *graph_.TypeOf(ref);
      if (!ir::IsFloatingPoint(type.dtype) && type.dtype != ir::DType::kBool && type.dtype != ir::DType::kInt64 &&
          type.dtype != ir::DType::kInt32) {
        return Status::InvalidArgument(fmt::format("{}: unsupported input dtype {}", ir::PrintRef(graph_, ref), ToString(type.dtype)));
      }
      const std::vector<int64_t>& own = type.stride;
      if (type.shape == space_->full) {
        // The full space itself, also where every reduced dim has size 1 and its shape is the kept
        // one too (batch norm after a 1x1 pool): it can be reduced.
        space_of_[ref.value * 64 + ref.output] = Space::kFull;
        inputs_.push_back({ref, Space::kFull, ir::BroadcastStrides(type, space_->full)});
      } else if (type.shape == space_->Kept(true) || type.shape == space_->Kept(false)) {
        // One value per program, at the kept index.
        std::vector<int64_t> strides(space_->full.size(), 0);
        if (type.shape.size() == space_->full.size()) {
          strides = own;
        } else {
          for (size_t i = 0; i < kept_dims_.size(); ++i) strides[static_cast<size_t>(kept_dims_[i])] = own[i];
        }
        for (int64_t d : space_->dims) strides[static_cast<size_t>(d)] = 0;
        space_of_[ref.value * 64 + ref.output] = Space::kKept;
        inputs_.push_back({ref, Space::kKept, strides});
      } else if (passes::BroadcastsTo(type.shape, space_->full)) {
        // Constant along every reduced dim (a per-channel vector under batch norm): one value per program.
        std::vector<int64_t> strides = ir::BroadcastStrides(type, space_->full);
        bool constant = true;
        for (int64_t d : space_->dims) constant = constant && strides[static_cast<size_t>(d)] == 0;
        Space space = constant ? Space::kKept : Space::kFull;
        space_of_[ref.value * 64 + ref.output] = space;
        inputs_.push_back({ref, space, strides});
      } else {
        return Status::InvalidArgument(fmt::format("{}: shape {} is neither the reduced space {} nor broadcast to it",
                                                   ir::PrintRef(graph_, ref), ir::ShapeToString(type.shape),
                                                   ir::ShapeToString(space_->full)));
      }
      level_[Key(ref)] = 0;
    }
    return Status::Ok();
  }

  static int64_t Key(ir::NodeRef ref) { return static_cast<int64_t>(ref.value) * 64 + ref.output; }
  Space SpaceOf(ir::NodeRef ref) const { return space_of_.at(Key(ref)); }

  // Full or kept per node output, and its level: how many reductions lie on its longest path
  // from the group's inputs (a full value at level l is computed in pass l).
  Status ClassifyNodes() {
    for (ir::ValueId id : group_.nodes) {
      const auto& op = graph_.value(id).As<ir::OpNode>();
      int level = 0;
      for (const ir::NodeRef& ref : passes::TensorInputs(op)) level = std::max(level, level_.at(Key(ref)));
      if (passes::FusableReductionSpace(graph_, op)) {
        const ir::NodeRef input = passes::TensorInputs(op).front();
        if (SpaceOf(input) != Space::kFull) {
          return Status::InvalidArgument(fmt::format("%{}: reduces a value that is not in the full space", op.name));
        }
        std::optional<OnlineSum> online = fold_online_ ? FindOnlineSum(op) : std::nullopt;
        for (int32_t i = 0; i < op.num_outputs(); ++i) {
          space_of_[Key(op.ref(i))] = passes::IsScan(op.op) ? Space::kFull : Space::kKept;
          level_[Key(op.ref(i))] = online ? level_.at(Key(online->max)) : level + 1;
        }
        if (online) online_[Key(op.ref())] = *online;
        continue;
      }
      if (op.num_outputs() != 1 || !passes::InReductionSpace(op.type().shape, *space_)) {
        return Status::InvalidArgument(fmt::format("%{}: shape {} is outside the reduction's space", op.name,
                                                   ir::ShapeToString(op.type().shape)));
      }
      bool full = op.type().shape == space_->full;
      space_of_[Key(op.ref())] = full ? Space::kFull : Space::kKept;
      level_[Key(op.ref())] = level;
    }
    return Status::Ok();
  }

  // A folded row's length is a runtime argument of the kernel, not a literal: with a literal trip
  // count Triton compiles the loop into slower code (measured on the H200 for softmax over rows of
  // 393216: 4.85 ms with the literal, 4.64 ms with the argument, bench/RESULTS.md eighteenth session).
  bool RowLengthIsArgument() const { return !single_ && !split_ && !cols_; }
  std::string RowLength() const { return RowLengthIsArgument() ? "kf_n" : std::to_string(reduced_); }

  // sum(exp(x - amax(x))) over the same dims (softmax's and log-softmax's normalizer, as the
  // decompose pass writes them): it can be folded in the amax's own pass over x, online (a running
  // max and a sum of exponentials rescaled to it, per lane), which saves one read of every row.
  struct OnlineSum {
    ir::NodeRef x;
    ir::NodeRef max;
  };
  bool InGroup(ir::ValueId id) const { return std::find(group_.nodes.begin(), group_.nodes.end(), id) != group_.nodes.end(); }
  const ir::OpNode* GroupOp(ir::NodeRef ref, const char* name) const {
    if (!InGroup(ref.value)) return nullptr;
    const ir::OpNode* op = graph_.value(ref.value).TryAs<ir::OpNode>();
    return op != nullptr && op->op == name ? op : nullptr;
  }
  std::optional<OnlineSum> FindOnlineSum(const ir::OpNode& sum) const {
    if (sum.op != "aten.sum.dim_IntList") return std::nullopt;
    const ir::OpNode* exp = GroupOp(passes::TensorInputs(sum).front(), "aten.exp.default");
    if (exp == nullptr) return std::nullopt;
    const ir::OpNode* sub = GroupOp(passes::TensorInputs(*exp).front(), "aten.sub.Tensor");
    if (sub == nullptr || sub->FindArgument({2, "alpha"}) != nullptr) return std::nullopt;
    std::vector<ir::NodeRef> operands = passes::TensorInputs(*sub);
    if (operands.size() != 2) return std::nullopt;
    const ir::OpNode* max = GroupOp(operands[1], "aten.amax.default");
    if (max == nullptr || passes::TensorInputs(*max).front() != operands[0]) return std::nullopt;
    if (SpaceOf(operands[0]) != Space::kFull || SpaceOf(operands[1]) != Space::kKept) return std::nullopt;
    return OnlineSum{operands[0], operands[1]};
  }
  bool IsOnline(const ir::OpNode& op) const { return online_.count(Key(op.ref())) > 0; }

  // -- emission ------------------------------------------------------------------------------
  // Ops that need a whole row in registers at once (max.dim's two outputs); argmax folds a row
  // R_BLOCK at a time like the plain reductions, and a scan carries the running total (or
  // product) of the blocks before into each block's own scan.
  static bool NeedsWholeRow(const std::string& op) { return op == "aten.max.dim"; }
  bool HasWholeRowOp() const {
    for (ir::ValueId id : group_.nodes) {
      if (NeedsWholeRow(graph_.value(id).As<ir::OpNode>().op)) return true;
    }
    return false;
  }
  // Column mode: kept loads and stores are masked to the program's columns; full tiles add the
  // kept base along axis 1.
  std::string KeptMask() const { return cols_ ? ", mask=kf_kmask" : ""; }
  std::string Base(const std::string& name) const { return name + (cols_ ? "_base[None, :]" : "_base"); }
  // The layout an output is allocated in: its type's for a full-space value (stored through its
  // strides); dense for a kept one, which programs store at their flat kept index.
  ir::TensorType Allocated(const ir::NodeRef& ref) const {
    const ir::TensorType& type = *graph_.TypeOf(ref);
    if (SpaceOf(ref) == Space::kFull) return type;
    Result<ir::TensorType> dense = ir::TensorType::Contiguous(type.shape, type.dtype);
    return dense.ok() ? *dense : type;
  }

  // Split: every reduction folds the group's inputs directly (level 0) with sum, max, min or
  // var_mean, and only reduced values leave the kernel.
  bool Splittable() const {
    for (ir::ValueId id : group_.nodes) {
      const auto& op = graph_.value(id).As<ir::OpNode>();
      if (!passes::FusableReductionSpace(graph_, op)) continue;
      if (op.op != "aten.sum.dim_IntList" && op.op != "aten.amax.default" && op.op != "aten.amin.default" &&
          !IsVarMean(op)) {
        return false;
      }
      if (level_.at(Key(passes::TensorInputs(op).front())) != 0) return false;
    }
    // A full-space output is stored by the partial programs, each over its slice, when it needs
    // no reduction's result (batch norm's centered values beside their sum of squares).
    for (const ir::NodeRef& ref : outputs_) {
      if (SpaceOf(ref) == Space::kFull && level_.at(Key(ref)) != 0) return false;
    }
    return true;
  }

  std::vector<ir::NodeRef> FullOutputs() const {
    std::vector<ir::NodeRef> full;
    for (const ir::NodeRef& ref : outputs_) {
      if (SpaceOf(ref) == Space::kFull) full.push_back(ref);
    }
    return full;
  }

  std::vector<const ir::OpNode*> Reductions() const {
    std::vector<const ir::OpNode*> reductions;
    for (ir::ValueId id : group_.nodes) {
      const auto& op = graph_.value(id).As<ir::OpNode>();
      if (passes::FusableReductionSpace(graph_, op)) reductions.push_back(&op);
    }
    return reductions;
  }

  // Kept-space inputs: loaded once per program at its kept index.
  void EmitKeptInputs(SourceWriter& out) {
    for (const auto& input : inputs_) {
      if (input.space != Space::kKept) continue;
      out.Line(fmt::format("{0}_base = {1}", Name(input.ref), KeptOffset(input.strides)));
      out.Line(fmt::format("{0} = tl.load({0}_ptr + {0}_base{1}){2}", Name(input.ref), KeptMask(), Cast(input.ref)));
      available_.insert(Key(input.ref));
    }
  }

  // Two kernels: <name>_partial folds slice kf_part of row kf_row into one partial per
  // reduction; <name> combines a row's partials and computes the reduced-space epilogue.
  Status EmitSplitBody(EmittedKernel& kernel) {
    SourceWriter out;
    std::vector<std::string> params;
    for (const auto& input : inputs_) params.push_back(Name(input.ref) + "_ptr");
    for (const ir::NodeRef& ref : FullOutputs()) params.push_back(Name(ref) + "_ptr");
    AddPartialParams(params);
    params.push_back("R_BLOCK: tl.constexpr");
    if (cols_) params.push_back("C_BLOCK: tl.constexpr");
    out.Line("@triton.jit");
    out.Open(fmt::format("def {}_partial({}):", kernel.name, fmt::join(params, ", ")));
    out.Line(fmt::format("# Partial results of {}: {} program(s) per row fold {} of its {} elements each{}.", kernel.name, parts_,
                         chunk_, reduced_, cols_ ? fmt::format(", for C_BLOCK={} neighbouring rows at once", cols_) : ""));
    out.Line("kf_pid = tl.program_id(0).to(tl.int64)");
    out.Line(fmt::format("kf_part = kf_pid % {}", parts_));
    if (cols_) {
      out.Line(fmt::format("kf_row = (kf_pid // {}) * C_BLOCK + tl.arange(0, C_BLOCK)", parts_));
      out.Line(fmt::format("kf_kmask = kf_row < {}", kept_count_));
    } else {
      out.Line(fmt::format("kf_row = kf_pid // {}", parts_));
    }
    EmitUnravel(out, "kf_row", kept_dims_, "kf_k");
    for (const auto& input : inputs_) {
      if (input.space == Space::kFull) out.Line(fmt::format("{}_base = {}", Name(input.ref), KeptOffset(input.strides)));
    }
    const std::vector<ir::NodeRef> full_outputs = FullOutputs();
    for (const ir::NodeRef& ref : full_outputs) {
      out.Line(fmt::format("{}_base = {}", Name(ref), KeptOffset(graph_.TypeOf(ref)->stride)));
    }
    EmitKeptInputs(out);
    RETURN_IF_ERROR(EmitKeptNodes(out, kernel));
    RETURN_IF_ERROR(EmitPass(out, kernel, 0, /*last=*/!full_outputs.empty()));
    out.Close();
    const size_t partial_end = out.text().size();
    out.Blank();
    out.Blank();

    // The combining kernel: one program per kept element.
    const int64_t cols = std::exchange(cols_, 0);
    available_.clear();
    params.clear();
    AddPartialParams(params);
    for (const auto& input : inputs_) {
      if (input.space == Space::kKept) params.push_back(Name(input.ref) + "_ptr");
    }
    for (const auto& output : outputs_) {
      if (SpaceOf(output) == Space::kKept) params.push_back(Name(output) + "_ptr");
    }
    params.push_back("S_BLOCK: tl.constexpr");
    OpenKernel(out, kernel.name, params, graph_, group_);
    out.Line(fmt::format("# Reduces dims [{}] of {}: combines the {} partial results of each of the {} row(s).",
                         fmt::join(space_->dims, ", "), ir::ShapeToString(space_->full), parts_, kept_count_));
    out.Line("kf_pid = tl.program_id(0).to(tl.int64)");
    EmitUnravel(out, "kf_pid", kept_dims_, "kf_k");
    EmitKeptInputs(out);
    out.Line("kf_s = tl.arange(0, S_BLOCK)");
    out.Line(fmt::format("kf_smask = kf_s < {}", parts_));
    for (const ir::OpNode* op : Reductions()) {
      auto partial = [&](const char* suffix, const std::string& other) {
        return fmt::format("tl.load(kf_part_{}{}_ptr + kf_pid * {} + kf_s, mask=kf_smask, other={})", Name(op->ref()), suffix,
                           parts_, other);
      };
      if (IsVarMean(*op)) {
        EmitWelfordMerge(out, *op, partial("_mean", "0.0"), partial("_m2", "0.0"), partial("_n", "0.0"), "");
        EmitVarMeanOutputs(out, *op);
      } else {
        out.Line(fmt::format("{} = {}({}, axis=0)", Name(op->ref()), Finalize(*op), partial("", Identity(*op))));
      }
      for (int32_t i = 0; i < op->num_outputs(); ++i) available_.insert(Key(op->ref(i)));
    }
    RETURN_IF_ERROR(EmitKeptNodes(out, kernel));
    for (const ir::NodeRef& ref : outputs_) {
      if (SpaceOf(ref) == Space::kKept) out.Line(fmt::format("tl.store({}_ptr + kf_pid, {})", Name(ref), Name(ref)));
    }
    out.Close();
    kernel.source = out.text();
    // The partial kernel's slices are tuned on a GPU (kSplitSliceSpace); in column tiles, and on
    // the CPU interpreter, its sizes are fixed.
    std::string partial_meta = fmt::format("R_BLOCK={}{}, num_warps={}", block_, cols ? fmt::format(", C_BLOCK={}", cols) : "",
                                           cols ? 4 : 8);
    if (!cols && options_.autotune) {
      EmittedKernel partial;
      partial.name = kernel.name + "_partial";
      partial_meta = FinishTunedBlock(partial, kernel.source.substr(0, partial_end), kSplitSliceSpace, options_);
      kernel.source = partial.source + kernel.source.substr(partial_end);
    }

    std::vector<std::string> args, parts;
    for (const auto& input : inputs_) args.push_back(Name(input.ref));
    for (const ir::NodeRef& ref : full_outputs) {
      kernel.launch.push_back(EmptyLike(Name(ref), Allocated(ref)));
      args.push_back(Name(ref));
    }
    for (const ir::OpNode* op : Reductions()) {
      for (const char* suffix : PartialSuffixes(*op)) {
        std::string part = fmt::format("{}_part{}", Name(op->ref()), suffix);
        kernel.launch.push_back(fmt::format("{} = torch.empty(({},), dtype=torch.float32, device=device)", part,
                                            kept_count_ * parts_));
        args.push_back(part);
        parts.push_back(part);
      }
    }
    const int64_t slices = cols ? (kept_count_ + cols - 1) / cols : kept_count_;
    if (!partial_meta.empty()) args.push_back(partial_meta);
    kernel.launch.push_back(fmt::format("{}_partial[({},)]({})", kernel.name, slices * parts_, fmt::join(args, ", ")));
    for (const auto& input : inputs_) {
      if (input.space == Space::kKept) parts.push_back(Name(input.ref));
    }
    for (const ir::NodeRef& ref : outputs_) {
      if (SpaceOf(ref) == Space::kFull) continue;
      kernel.launch.push_back(EmptyLike(Name(ref), Allocated(ref)));
      parts.push_back(Name(ref));
    }
    kernel.launch.push_back(fmt::format("{}[({},)]({}, S_BLOCK={}, num_warps=4)", kernel.name, kept_count_,
                                        fmt::join(parts, ", "), NextPowerOfTwo(parts_)));
    return Status::Ok();
  }

  Status EmitBody(EmittedKernel& kernel) {
    if (split_) return EmitSplitBody(kernel);
    std::vector<std::string> params;
    for (const auto& input : inputs_) params.push_back(Name(input.ref) + "_ptr");
    for (const auto& output : outputs_) params.push_back(Name(output) + "_ptr");
    if (RowLengthIsArgument()) params.push_back("kf_n");
    params.push_back("R_BLOCK: tl.constexpr");
    if (cols_) params.push_back("C_BLOCK: tl.constexpr");

    SourceWriter out;
    OpenKernel(out, kernel.name, params, graph_, group_);
    out.Line(fmt::format("# Reduces dims [{}] of {}: one program per kept element ({}), {} elements each{}{}.",
                         fmt::join(space_->dims, ", "), ir::ShapeToString(space_->full), kept_count_, reduced_,
                         single_ ? ", held in registers" : ", folded R_BLOCK at a time",
                         cols_ ? fmt::format("; C_BLOCK={} neighbouring kept elements per program", cols_) : ""));
    if (cols_) {
      out.Line("kf_pid = tl.program_id(0).to(tl.int64) * C_BLOCK + tl.arange(0, C_BLOCK)");
      out.Line(fmt::format("kf_kmask = kf_pid < {}", kept_count_));
    } else {
      out.Line("kf_pid = tl.program_id(0).to(tl.int64)");
    }
    EmitUnravel(out, "kf_pid", kept_dims_, "kf_k");
    for (const auto& input : inputs_) {
      out.Line(fmt::format("{}_base = {}", Name(input.ref), KeptOffset(input.strides)));
    }
    for (const ir::NodeRef& ref : outputs_) {
      if (SpaceOf(ref) == Space::kFull) out.Line(fmt::format("{}_base = {}", Name(ref), KeptOffset(graph_.TypeOf(ref)->stride)));
    }
    for (const auto& input : inputs_) {
      if (input.space == Space::kKept) {
        const std::string name = Name(input.ref);
        const bool scalar = KeptOffset(input.strides) == "0";
        out.Line(fmt::format("{} = {}{}", name, LoadAt(name + "_ptr", scalar ? "0" : name + "_base", cols_ ? "mask=kf_kmask" : ""),
                             Cast(input.ref)));
        available_.insert(Key(input.ref));
      }
    }
    RETURN_IF_ERROR(EmitKeptNodes(out, kernel));

    int last_pass = 0;
    for (ir::ValueId id : group_.nodes) {
      const auto& op = graph_.value(id).As<ir::OpNode>();
      if (passes::FusableReductionSpace(graph_, op)) {
        last_pass = std::max(last_pass, level_.at(Key(passes::TensorInputs(op).front())));
      }
    }
    for (const ir::NodeRef& ref : outputs_) {
      if (SpaceOf(ref) == Space::kFull) last_pass = std::max(last_pass, level_.at(Key(ref)));
    }
    if (single_) EmitReducedIndex(out, "tl.arange(0, R_BLOCK)");
    for (int pass = 0; pass <= last_pass; ++pass) RETURN_IF_ERROR(EmitPass(out, kernel, pass, pass == last_pass));
    for (const ir::NodeRef& ref : outputs_) {
      if (SpaceOf(ref) == Space::kKept) out.Line(fmt::format("tl.store({0}_ptr + kf_pid, {0}{1})", Name(ref), KeptMask()));
    }
    out.Close();
    kernel.source = out.text();
    return Status::Ok();
  }

  // kf_r (the reduced flat index), kf_rmask and the reduced dims' index variables.
  void EmitReducedIndex(SourceWriter& out, const std::string& range) {
    out.Line(fmt::format("kf_r = {}{}", range, cols_ ? "[:, None]" : ""));
    out.Line(cols_ ? fmt::format("kf_rmask = (kf_r < {}) & kf_kmask[None, :]", reduced_)
                   : fmt::format("kf_rmask = kf_r < {}", RowLength()));
    EmitUnravel(out, "kf_r", space_->dims, "kf_i");
  }

  // idx variables `prefix<d>` for the dims `dims` of the full shape from the flat `flat`.
  void EmitUnravel(SourceWriter& out, const std::string& flat, const std::vector<int64_t>& dims, const std::string& prefix) {
    if (dims.empty()) return;
    if (dims.size() == 1) {
      out.Line(fmt::format("{}{} = {}", prefix, dims[0], flat));
      return;
    }
    out.Line(fmt::format("{}_rem = {}", prefix, flat));
    for (size_t i = dims.size(); i-- > 0;) {
      int64_t d = dims[i];
      if (i == 0) {
        out.Line(fmt::format("{0}{1} = {0}_rem", prefix, d));
      } else {
        out.Line(fmt::format("{0}{1} = {0}_rem % {2}", prefix, d, space_->full[static_cast<size_t>(d)]));
        out.Line(fmt::format("{0}_rem = {0}_rem // {1}", prefix, space_->full[static_cast<size_t>(d)]));
      }
    }
  }

  std::string KeptOffset(const std::vector<int64_t>& strides) const {
    std::vector<std::pair<std::string, int64_t>> terms;
    for (int64_t d : kept_dims_) terms.push_back({fmt::format("kf_k{}", d), strides[static_cast<size_t>(d)]});
    return Offset(terms);
  }
  std::string ReducedOffset(const std::vector<int64_t>& strides) const {
    std::vector<std::pair<std::string, int64_t>> terms;
    for (int64_t d : space_->dims) terms.push_back({fmt::format("kf_i{}", d), strides[static_cast<size_t>(d)]});
    std::string offset = Offset(terms);
    // Zero strides along every reduced dim (each of size 1): still a block, as the mask is one.
    if (offset == "0" && !space_->dims.empty()) return fmt::format("kf_i{} * 0", space_->dims.front());
    return offset;
  }
  std::string Cast(ir::NodeRef ref) const { return ComputeCast(graph_.TypeOf(ref)->dtype); }

  // A row gather's one load per row: x at the row's index along the gathered dim, 0 where the
  // index is out of range (torch would raise; the kernel must not read outside x).
  std::string RowGather(const ir::OpNode& op) const {
    const ir::NodeRef x = op.args[0].As<ir::NodeRef>(), index = op.args[2].As<ir::NodeRef>();
    const int64_t d = space_->dims.front();
    int64_t stride = 0;
    for (const auto& input : inputs_) {
      if (input.ref == x) stride = input.strides[static_cast<size_t>(d)];
    }
    std::string i = Name(index);
    return fmt::format("tl.load({0}_ptr + {0}_base + {1} * {2}, mask=({1} >= 0) & ({1} < {3}){4}, other=0.0)", Name(x), i,
                       stride, space_->full[static_cast<size_t>(d)], cols_ ? " & kf_kmask" : "");
  }

  // Kept-space pointwise nodes whose inputs are all available, in node order, until none is left.
  Status EmitKeptNodes(SourceWriter& out, EmittedKernel& kernel) {
    for (bool progress = true; progress;) {
      progress = false;
      for (ir::ValueId id : group_.nodes) {
        const auto& op = graph_.value(id).As<ir::OpNode>();
        if (available_.count(Key(op.ref())) || passes::FusableReductionSpace(graph_, op)) continue;
        if (SpaceOf(op.ref()) != Space::kKept) continue;
        const bool gather = passes::RowGatherSpace(graph_, op).has_value();
        bool ready = true;
        for (const ir::NodeRef& ref : passes::TensorInputs(op)) {
          // A gather reads x from memory, not from a pass: only its index must be ready.
          if (gather && ref == op.args[0].As<ir::NodeRef>()) continue;
          ready = ready && available_.count(Key(ref));
        }
        if (!ready) continue;
        std::string expr;
        if (gather) {
          expr = RowGather(op);
        } else {
          ASSIGN_OR_RETURN(expr, PointwiseExpression(graph_, op, kernel.helpers));
        }
        out.Line(fmt::format("{} = {}", Name(op.ref()), expr));
        available_.insert(Key(op.ref()));
        progress = true;
      }
    }
    return Status::Ok();
  }

  // Pass `pass`: the full values at levels <= pass that this pass's reductions and stores need,
  // the reductions whose input is at level `pass`, and (in the last pass) the full outputs.
  Status EmitPass(SourceWriter& out, EmittedKernel& kernel, int pass, bool last) {
    std::vector<const ir::OpNode*> reductions;
    std::vector<ir::NodeRef> targets;
    for (ir::ValueId id : group_.nodes) {
      const auto& op = graph_.value(id).As<ir::OpNode>();
      if (!passes::FusableReductionSpace(graph_, op) || (!single_ && passes::IsScan(op.op))) continue;
      ir::NodeRef input = IsOnline(op) ? online_.at(Key(op.ref())).x : passes::TensorInputs(op).front();
      if (level_.at(Key(input)) != pass) continue;
      reductions.push_back(&op);
      targets.push_back(input);
    }
    // Online sums come last, so that their max is final when they are.
    std::stable_partition(reductions.begin(), reductions.end(), [&](const ir::OpNode* op) { return !IsOnline(*op); });
    std::vector<ir::NodeRef> stores;
    if (last) {
      for (const ir::NodeRef& ref : outputs_) {
        if (SpaceOf(ref) == Space::kFull) stores.push_back(ref);
      }
    }
    targets.insert(targets.end(), stores.begin(), stores.end());
    if (targets.empty()) return Status::Ok();

    std::set<int64_t> needed;
    std::vector<ir::NodeRef> stack = targets;
    while (!stack.empty()) {
      ir::NodeRef ref = stack.back();
      stack.pop_back();
      if (SpaceOf(ref) != Space::kFull || !needed.insert(Key(ref)).second) continue;
      if (!InGroup(ref.value)) continue;
      for (const ir::NodeRef& input : passes::TensorInputs(graph_.value(ref.value))) stack.push_back(input);
    }

    std::optional<SourceWriter::Scope> loop;
    if (!single_) {
      // A looped scan is computed where its values are needed, block after block, from the
      // blocks before it: their total (or product) starts at the identity in each pass.
      for (ir::ValueId id : group_.nodes) {
        const auto& op = graph_.value(id).As<ir::OpNode>();
        if (!passes::IsScan(op.op) || !needed.count(Key(op.ref()))) continue;
        out.Line(fmt::format("kf_carry_{} = tl.full([{}], {}, tl.float32)", Name(op.ref()), cols_ ? "C_BLOCK" : "1",
                             Identity(op)));
      }
      for (const ir::OpNode* op : reductions) {
        if (IsVarMean(*op)) {
          for (const char* part : {"mean", "m2", "n"}) {
            out.Line(fmt::format("kf_{}_{} = tl.zeros([R_BLOCK{}], tl.float32)", part, Name(op->ref()), cols_ ? ", C_BLOCK" : ""));
          }
          continue;
        }
        for (int32_t i = 0; i < op->num_outputs(); ++i) {
          out.Line(fmt::format("kf_acc_{} = tl.full([R_BLOCK{}], {}, tl.float32)", Name(op->ref(i)), cols_ ? ", C_BLOCK" : "",
                               Identity(*op)));
        }
        if (op->op == "aten.argmax.default") {
          out.Line(fmt::format("kf_at_{} = tl.zeros([R_BLOCK{}], {})", Name(op->ref()), cols_ ? ", C_BLOCK" : "",
                               PositionType()));
        }
      }
      out.Open(fmt::format("for kf_r0 in range({}):", loop_range_.empty() ? fmt::format("0, {}, R_BLOCK", RowLength()) : loop_range_));
      EmitReducedIndex(out, "(kf_r0 + tl.arange(0, R_BLOCK))");
      bool welford = std::any_of(reductions.begin(), reductions.end(), [](const ir::OpNode* op) { return IsVarMean(*op); });
      if (welford) {
        // A lane is in range for a prefix of the steps, so every lane updated in this step has seen
        // exactly this many elements: one reciprocal per step instead of a division per element.
        std::string steps = loop_start_ == "0" ? "kf_r0" : fmt::format("(kf_r0 - {})", loop_start_);
        out.Line(fmt::format("kf_w = 1.0 / ({} // R_BLOCK + 1)", steps));
      }
    }
    std::set<int64_t> computed_here;
    auto ready = [&](ir::NodeRef ref) { return single_ ? available_.count(Key(ref)) > 0 : computed_here.count(Key(ref)) > 0; };
    for (const auto& input : inputs_) {
      if (input.space != Space::kFull || !needed.count(Key(input.ref)) || ready(input.ref)) continue;
      std::string name = Name(input.ref);
      out.Line(fmt::format("{0} = tl.load({0}_ptr + {1} + {2}, mask=kf_rmask, other=0){3}", name, Base(name),
                           ReducedOffset(input.strides), Cast(input.ref)));
      computed_here.insert(Key(input.ref));
      available_.insert(Key(input.ref));
    }
    for (ir::ValueId id : group_.nodes) {
      const auto& op = graph_.value(id).As<ir::OpNode>();
      const bool looped_scan = !single_ && passes::IsScan(op.op);
      if (!needed.count(Key(op.ref())) || ready(op.ref()) || (passes::FusableReductionSpace(graph_, op) && !looped_scan)) {
        continue;
      }
      if (looped_scan) {
        EmitScanStep(out, kernel, op);
        computed_here.insert(Key(op.ref()));
        available_.insert(Key(op.ref()));
        continue;
      }
      ASSIGN_OR_RETURN(std::string expr, PointwiseExpression(graph_, op, kernel.helpers));
      out.Line(fmt::format("{} = {}", Name(op.ref()), expr));
      computed_here.insert(Key(op.ref()));
      available_.insert(Key(op.ref()));
    }
    for (const ir::NodeRef& ref : stores) {
      out.Line(fmt::format("tl.store({0}_ptr + {1} + {2}, {0}, mask=kf_rmask)", Name(ref), Base(Name(ref)),
                           ReducedOffset(graph_.TypeOf(ref)->stride)));
    }
    for (const ir::OpNode* op : reductions) {
      if (IsOnline(*op)) EmitOnlineSumStep(out, *op);  // before its max's step: it rescales from the old max
    }
    for (const ir::OpNode* op : reductions) {
      if (IsOnline(*op)) continue;
      std::string x = Name(passes::TensorInputs(*op).front());
      if (single_) {
        EmitSingleReduction(out, *op, x);
      } else if (op->op == "aten.argmax.default") {
        EmitArgmaxStep(out, *op, x);
      } else if (IsVarMean(*op)) {
        EmitWelfordStep(out, *op, x);
      } else {
        std::string acc = "kf_acc_" + Name(op->ref());
        std::string masked = fmt::format("tl.where(kf_rmask, {}, {})", x, Identity(*op));
        out.Line(fmt::format("{} = {}", acc, op->op == "aten.sum.dim_IntList" ? acc + " + " + masked
                                                 : fmt::format("{}({}, {})", Combine(*op), acc, masked)));
      }
    }
    if (!single_) {
      out.Close();
      for (const ir::OpNode* op : reductions) {
        if (IsVarMean(*op)) {
          std::string name = Name(op->ref());
          EmitWelfordMerge(out, *op, "kf_mean_" + name, "kf_m2_" + name, "kf_n_" + name, cols_ ? "[None, :]" : "");
          if (split_) {
            for (const char* part : {"mean", "m2", "n"}) {
              out.Line(fmt::format("tl.store(kf_part_{0}_{1}_ptr + {2}, kf_{1}_total_{0}{3})", name, part, PartialIndex(), KeptMask()));
            }
          } else {
            EmitVarMeanOutputs(out, *op);
          }
        } else if (op->op == "aten.argmax.default") {
          EmitArgmaxFinish(out, *op);
        } else if (split_) {
          out.Line(fmt::format("tl.store(kf_part_{0}_ptr + {2}, {1}(kf_acc_{0}, axis=0){3})", Name(op->ref()), Finalize(*op),
                               PartialIndex(), KeptMask()));
        } else if (IsOnline(*op)) {
          EmitOnlineSumFinish(out, *op);
        } else {
          out.Line(fmt::format("{0} = {1}(kf_acc_{0}, axis=0)", Name(op->ref()), Finalize(*op)));
        }
      }
      if (split_) return Status::Ok();
    }
    for (const ir::OpNode* op : reductions) {
      for (int32_t i = 0; i < op->num_outputs(); ++i) available_.insert(Key(op->ref(i)));
    }
    return EmitKeptNodes(out, kernel);
  }

  // One block of an online sum of exponentials: each lane's sum is rescaled from the max it was
  // taken against to the new one, then this block's exp(x - new max) is added. A lane that has
  // seen only -inf (masked, or -inf inputs) holds 0.
  void EmitOnlineSumStep(SourceWriter& out, const ir::OpNode& op) {
    const OnlineSum& online = online_.at(Key(op.ref()));
    const std::string name = Name(op.ref()), max = "kf_acc_" + Name(online.max);
    out.Line(fmt::format("kf_x_{0} = tl.where(kf_rmask, {1}, float('-inf'))", name, Name(online.x)));
    out.Line(fmt::format("kf_new_{0} = tl.maximum({1}, kf_x_{0})", name, max));
    out.Line(fmt::format("kf_acc_{0} = tl.where(kf_new_{0} == float('-inf'), 0.0, kf_acc_{0} * tl.exp({1} - kf_new_{0}) + "
                         "tl.exp(kf_x_{0} - kf_new_{0}))", name, max));
  }

  // The row's sum from the lanes': each rescaled from its own max to the row's.
  void EmitOnlineSumFinish(SourceWriter& out, const ir::OpNode& op) {
    const OnlineSum& online = online_.at(Key(op.ref()));
    const std::string max = Name(online.max), lanes = "kf_acc_" + max;
    out.Line(fmt::format("{0} = tl.sum(tl.where({1} == float('-inf'), 0.0, kf_acc_{0} * tl.exp({1} - {2}{3})), axis=0)",
                         Name(op.ref()), lanes, max, cols_ ? "[None, :]" : ""));
  }

  // A looped argmax keeps, per lane of the tile, the largest value seen and where: a later step
  // takes over only when strictly larger (or NaN over a number, as torch.argmax ranks NaN highest),
  // so each lane keeps the first occurrence of its maximum.
  void EmitArgmaxStep(SourceWriter& out, const ir::OpNode& op, const std::string& x) {
    const std::string name = Name(op.ref());
    out.Line(fmt::format("kf_v_{0} = tl.where(kf_rmask, {1}, float('-inf'))", name, x));
    out.Line(fmt::format("kf_take_{0} = (kf_v_{0} > kf_acc_{0}) | ((kf_v_{0} != kf_v_{0}) & (kf_acc_{0} == kf_acc_{0}))",
                         name));
    out.Line(fmt::format("kf_acc_{0} = tl.where(kf_take_{0}, kf_v_{0}, kf_acc_{0})", name));
    out.Line(fmt::format("kf_at_{0} = tl.where(kf_take_{0}, kf_r.to({1}), kf_at_{0})", name, PositionType()));
  }

  // Positions within a row are int32 where they fit: half the registers of int64 per lane, which
  // measured 1.5x faster on the H200 for a [64, 64] tile (level-1 argmax: 0.231 -> 0.149 ms).
  std::string PositionType() const { return reduced_ < (int64_t{1} << 31) ? "tl.int32" : "tl.int64"; }

  // The row's answer from the lanes: the smallest position among the lanes holding the maximum
  // (among the NaN lanes when there are any).
  void EmitArgmaxFinish(SourceWriter& out, const ir::OpNode& op) {
    const std::string name = Name(op.ref());
    const std::string across = cols_ ? "[None, :]" : "";
    out.Line(fmt::format("kf_nan_{0} = tl.max(tl.where(kf_acc_{0} != kf_acc_{0}, 1, 0), axis=0)", name));
    out.Line(fmt::format("kf_best_{0} = tl.max(tl.where(kf_acc_{0} != kf_acc_{0}, float('-inf'), kf_acc_{0}), axis=0)",
                         name));
    out.Line(fmt::format("kf_pick_{0} = tl.where(kf_nan_{0}{1} > 0, kf_acc_{0} != kf_acc_{0}, kf_acc_{0} == kf_best_{0}{1})",
                         name, across));
    out.Line(fmt::format("{0} = tl.min(tl.where(kf_pick_{0}, kf_at_{0}, {1}), axis=0).to(tl.int64)", name, reduced_));
  }

  void EmitSingleReduction(SourceWriter& out, const ir::OpNode& op, const std::string& x) {
    std::string masked = fmt::format("tl.where(kf_rmask, {}, {})", x, Identity(op));
    if (IsVarMean(op)) {
      // The row is in registers: its mean, then the sum of squares about it.
      const std::string mean = Name(op.ref(1));
      out.Line(fmt::format("{} = tl.sum({}, axis=0) / {}", mean, masked, reduced_));
      out.Line(fmt::format("kf_d_{0} = tl.where(kf_rmask, {1} - {0}{2}, 0.0)", mean, x, cols_ ? "[None, :]" : ""));
      out.Line(fmt::format("{0} = tl.sum(kf_d_{1} * kf_d_{1}, axis=0) / {2}", Name(op.ref(0)), mean, VarianceDivisor(op)));
    } else if (passes::IsScan(op.op)) {
      out.Line(fmt::format("{} = tl.{}({}, axis=0)", Name(op.ref()), ScanOf(op).function, masked));
    } else if (op.op == "aten.argmax.default") {
      out.Line(fmt::format("{} = tl.argmax({}, axis=0).to(tl.int64)", Name(op.ref()), masked));
    } else if (op.op == "aten.max.dim") {
      out.Line(fmt::format("kf_masked_{} = {}", Name(op.ref(0)), masked));
      out.Line(fmt::format("{0} = tl.max(kf_masked_{0}, axis=0)", Name(op.ref(0))));
      out.Line(fmt::format("{} = tl.argmax(kf_masked_{}, axis=0).to(tl.int64)", Name(op.ref(1)), Name(op.ref(0))));
    } else {
      out.Line(fmt::format("{} = {}({}, axis=0)", Name(op.ref()), Finalize(op), masked));
    }
  }

  // One block of a looped scan: the block's own scan combined with the carry of the blocks before,
  // then the carry advanced by the block's total (or product).
  void EmitScanStep(SourceWriter& out, EmittedKernel& kernel, const ir::OpNode& op) {
    const std::string name = Name(op.ref()), x = Name(passes::TensorInputs(op).front());
    const Scan scan = ScanOf(op);
    const std::string carry = fmt::format("kf_carry_{}{}", name, cols_ ? "[None, :]" : "");
    out.Line(fmt::format("kf_block_{} = tl.where(kf_rmask, {}, {})", name, x, Identity(op)));
    out.Line(fmt::format("{0} = tl.{1}(kf_block_{0}, axis=0) {2} {3}", name, scan.function, scan.combine, carry));
    if (scan.sum) {
      out.Line(fmt::format("kf_carry_{0} = kf_carry_{0} + tl.sum(kf_block_{0}, axis=0)", name));
    } else {
      kernel.helpers.insert("_kf_multiply");
      out.Line(fmt::format("kf_carry_{0} = kf_carry_{0} * tl.reduce(kf_block_{0}, 0, _kf_multiply)", name));
    }
  }

  static bool IsVarMean(const ir::OpNode& op) { return op.op == "aten.var_mean.correction"; }
  // A scan's Triton function and how a block's scan combines with the carry of the blocks before.
  struct Scan {
    bool sum;              // cumsum; else cumprod
    const char* function;  // tl.cumsum or tl.cumprod
    const char* combine;   // "+" or "*"
  };
  static Scan ScanOf(const ir::OpNode& op) {
    const bool sum = op.op == "aten.cumsum.default";
    return {sum, sum ? "cumsum" : "cumprod", sum ? "+" : "*"};
  }

  // Where a split program stores its slice's partial result of each kept element: the combining
  // kernel reads a kept element's parts together.
  std::string PartialIndex() const { return cols_ ? fmt::format("kf_row * {} + kf_part", parts_) : "kf_pid"; }

  // The partial results a split program stores per reduction: one value, or var_mean's (mean, M2,
  // count) of its slice.
  static std::vector<const char*> PartialSuffixes(const ir::OpNode& op) {
    if (IsVarMean(op)) return {"_mean", "_m2", "_n"};
    return {""};
  }
  // The pointer parameters of every reduction's partial results, shared by a split row's two kernels.
  void AddPartialParams(std::vector<std::string>& params) const {
    for (const ir::OpNode* op : Reductions()) {
      for (const char* suffix : PartialSuffixes(*op)) params.push_back(fmt::format("kf_part_{}{}_ptr", Name(op->ref()), suffix));
    }
  }

  // n - correction, the divisor of var_mean's M2 (FusableReductionSpace keeps it positive).
  std::string VarianceDivisor(const ir::OpNode& op) const {
    return fmt::format("{}", static_cast<double>(reduced_) - passes::VarianceCorrection(op).value_or(1.0));
  }

  // One Welford update per lane (kf_w = 1 / the lane's new count, shared by the step's lanes in
  // range): mean += d / n, M2 += d * (x - new mean).
  void EmitWelfordStep(SourceWriter& out, const ir::OpNode& op, const std::string& x) {
    const std::string name = Name(op.ref());
    out.Line(fmt::format("kf_d_{0} = tl.where(kf_rmask, {1} - kf_mean_{0}, 0.0)", name, x));
    out.Line(fmt::format("kf_mean_{0} = kf_mean_{0} + kf_d_{0} * kf_w", name));
    out.Line(fmt::format("kf_m2_{0} = kf_m2_{0} + kf_d_{0} * tl.where(kf_rmask, {1} - kf_mean_{0}, 0.0)", name, x));
    out.Line(fmt::format("kf_n_{0} = kf_n_{0} + tl.where(kf_rmask, 1.0, 0.0)", name));
  }

  // kf_{mean,m2,n}_total_<name>: the (mean, M2, count) summaries along axis 0 (per lane, or per
  // slice of a split row) as one. Chan's formula for many at once: the count is their sum, the
  // mean their count-weighted mean (as deviations from one summary's mean, so that a mean far from
  // zero loses nothing to rounding) and M2 the sum of theirs plus each count times its squared
  // distance from the mean. Plain sums, not a tree of pairwise merges: one pass of each on the
  // GPU, and Triton's interpreter runs a sum as one array operation rather than a call per pair.
  // `broadcast` widens a total back over axis 0 ("[None, :]" for column tiles).
  void EmitWelfordMerge(SourceWriter& out, const ir::OpNode& op, const std::string& mean, const std::string& m2,
                        const std::string& n, const std::string& broadcast) {
    const std::string name = Name(op.ref());
    out.Line(fmt::format("kf_sn_{} = {}", name, n));
    out.Line(fmt::format("kf_smean_{} = {}", name, mean));
    out.Line(fmt::format("kf_n_total_{0} = tl.sum(kf_sn_{0}, axis=0)", name));
    out.Line(fmt::format("kf_shift_{0} = tl.max(tl.where(kf_sn_{0} > 0.0, kf_smean_{0}, float('-inf')), axis=0)", name));
    out.Line(fmt::format("kf_shift_{0} = tl.where(kf_n_total_{0} > 0.0, kf_shift_{0}, 0.0)", name));
    out.Line(fmt::format("kf_mean_total_{0} = kf_shift_{0} + tl.sum(kf_sn_{0} * (kf_smean_{0} - kf_shift_{0}{1}), axis=0) / "
                         "tl.maximum(kf_n_total_{0}, 1.0)", name, broadcast));
    out.Line(fmt::format("kf_sdev_{0} = kf_smean_{0} - kf_mean_total_{0}{1}", name, broadcast));
    out.Line(fmt::format("kf_m2_total_{0} = tl.sum({1} + kf_sn_{0} * kf_sdev_{0} * kf_sdev_{0}, axis=0)", name, m2));
  }
  void EmitVarMeanOutputs(SourceWriter& out, const ir::OpNode& op) {
    const std::string name = Name(op.ref());
    out.Line(fmt::format("{} = kf_mean_total_{}", Name(op.ref(1)), name));
    out.Line(fmt::format("{} = kf_m2_total_{} / {}", Name(op.ref(0)), name, VarianceDivisor(op)));
  }

  static std::string Identity(const ir::OpNode& op) {
    if (op.op == "aten.sum.dim_IntList" || op.op == "aten.cumsum.default" || IsVarMean(op)) return "0.0";
    if (op.op == "aten.cumprod.default") return "1.0";
    if (op.op == "aten.amin.default") return "float('inf')";
    return "float('-inf')";
  }
  static std::string Combine(const ir::OpNode& op) {
    if (op.op == "aten.amin.default") return "tl.minimum";
    return "tl.maximum";
  }
  static std::string Finalize(const ir::OpNode& op) {
    if (op.op == "aten.sum.dim_IntList") return "tl.sum";
    if (op.op == "aten.amin.default") return "tl.min";
    return "tl.max";
  }

  // The launch with `meta` (its meta-parameters and num_warps; empty: the autotuner's choice).
  void EmitLaunch(EmittedKernel& kernel, const std::string& meta) {
    std::vector<std::string> args;
    for (const auto& input : inputs_) args.push_back(Name(input.ref));
    for (const ir::NodeRef& ref : outputs_) {
      kernel.launch.push_back(EmptyLike(Name(ref), Allocated(ref)));
      args.push_back(Name(ref));
    }
    if (RowLengthIsArgument()) args.push_back(std::to_string(reduced_));
    if (!meta.empty()) args.push_back(meta);
    int64_t programs = cols_ ? (kept_count_ + cols_ - 1) / cols_ : kept_count_;
    kernel.launch.push_back(fmt::format("{}[({},)]({})", kernel.name, programs, fmt::join(args, ", ")));
  }

  struct Input {
    ir::NodeRef ref;
    Space space;
    std::vector<int64_t> strides;  // over the full shape's dims
  };

  const ir::Graph& graph_;
  const passes::FusionGroup& group_;
  const KernelOptions& options_;
  std::optional<ReductionSpace> space_;
  std::vector<int64_t> kept_dims_;
  int64_t reduced_ = 1, kept_count_ = 1, block_ = 1;
  bool single_ = true;
  bool split_ = false;
  int64_t cols_ = 0;                // column mode: kept elements per program (0: one, in row mode)
  int64_t parts_ = 1, chunk_ = 0;  // split: programs per row, elements each
  std::string loop_range_;          // the looped passes' range(...) arguments; default the whole row
  std::string loop_start_ = "0";    // where that range starts
  std::vector<Input> inputs_;
  std::vector<ir::NodeRef> outputs_;
  std::map<int64_t, Space> space_of_;
  std::map<int64_t, int> level_;
  std::set<int64_t> available_;
  bool fold_online_ = false;            // fold online sums (FindOnlineSum) into their max's pass
  std::map<int64_t, OnlineSum> online_;  // the folded sums, by Key of their output
};

}  // namespace

Result<EmittedKernel> EmitReductionKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                          const KernelOptions& options) {
  return ReductionEmitter(graph, group, options).Run();
}

}  // namespace kforge::codegen
