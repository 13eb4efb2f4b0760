// Golden source for a few graphs (golden/*.py; KFORGE_UPDATE_GOLDEN=1 rewrites them) and the
// reporting of ops the pointwise emitter cannot translate.
#include "compiler/codegen/model_writer.h"
#include "compiler/codegen/gemm_tiles.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <regex>
#include <string>

#include "compiler/codegen/triton_pointwise.h"
#include "compiler/ir/import_graph.h"
#include "compiler/passes/pipeline.h"
#include "core/files.h"
#include "golden_files.h"
#include "golden_source.h"
#include "ir_test_util.h"

namespace kforge::codegen {
namespace {

using ir::testing::AddInputOk;
using ir::testing::AddOk;
using ir::testing::F32;
using ir::testing::Ref;
using testing::ExpectGoldenSource;

void ExpectGolden(const ir::Graph& graph, const std::string& name) {
  ExpectGoldenSource(WriteModelNew(graph, passes::PlanFusion(graph)), name);
}

ir::Graph Import(const std::string& name) {
  std::filesystem::path path = ir::testing::GoldenDir() / (name + ".json");
  return std::move(ir::ImportGraphText(ReadFile(path).value(), path.string())).value();
}

TEST(ModelWriterGoldenTest, Relu) { ExpectGolden(Import("relu"), "relu"); }
TEST(ModelWriterGoldenTest, LinearRelu) { ExpectGolden(Import("linear_relu"), "linear_relu"); }

// The running statistics are computed in the kernel that merges the batch statistics and, with
// num_batches_tracked + 1, copied into the buffers after every kernel has run. Written for the GPU,
// the class declares that its forward may run with its kernels switched off, to compile them all
// at once, and the running statistics that run would overwrite (compile_ahead.h).
TEST(ModelWriterGoldenTest, TrainingBatchNormWritesItsBuffersBack) {
  Result<passes::PipelineResult> compiled = passes::RunPipeline(Import("batch_norm_training"), {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  ModelWriterOptions options;
  options.compile_ahead = true;
  ExpectGoldenSource(WriteModelNew(compiled->graph, compiled->plan, options), "batch_norm_training");
}

// A forward whose ATen calls could fault on tensors no kernel wrote (an op the compiler knows
// nothing about; a gather) never runs with its kernels switched off.
TEST(ModelWriterTest, OnlyForwardsSafeWithoutKernelsCompileAhead) {
  for (const char* library_op : {"aten.relu.default", "aten.multinomial.default", "aten.embedding.default"}) {
    ir::GraphBuilder b("hand/ahead");
    ir::ValueId x = AddInputOk(b, "x", {4, 8});
    ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(x)}, {F32({4, 8})});
    ir::ValueId last = exp;
    if (std::string(library_op) != "aten.relu.default") {
      last = AddOk(b, "library", library_op, {Ref(exp), Ref(x)}, {F32({4, 8})});
    }
    b.AddOutput({last, 0});
    ir::Graph graph = std::move(b).Build();
    ModelWriterOptions options;
    options.fallback_unsupported = true;
    options.compile_ahead = true;
    Result<std::string> source = WriteModelNew(graph, passes::PlanFusion(graph), options);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    const bool ahead =
        source->find("kf_compile_ahead = {\"forward\": \"forward\", \"restores\": ()}") != std::string::npos;
    EXPECT_EQ(ahead, std::string(library_op) == "aten.relu.default") << library_op << "\n" << *source;
  }
}

// A scalar constant the capture lifted (Swin V2's logit-scale bound) is made on the device by a
// fill: torch.tensor(value, device=...) copies from the host, which a CUDA graph capture refuses.
TEST(ModelWriterTest, ScalarConstantsAreFilledOnTheDevice) {
  ir::GraphBuilder b("hand/lifted");
  ir::ValueId x = AddInputOk(b, "x", {4});
  ir::ValueId bound = b.AddConstant("lifted_tensor_0", "lifted_tensor_0", F32({}), 100.0).value();
  ir::ValueId clamp = AddOk(b, "minimum", "aten.minimum.default", {Ref(x), Ref(bound)}, {F32({4})});
  b.AddOutput({clamp, 0});
  ir::Graph graph = std::move(b).Build();
  ModelWriterOptions options;
  options.graph_replay = GraphReplay::kAlways;
  Result<std::string> source = WriteModelNew(graph, passes::PlanFusion(graph), options);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_NE(source->find("lifted_tensor_0 = torch.full((), 100.0, dtype=torch.float32, device=device)"), std::string::npos)
      << *source;
  EXPECT_EQ(source->find("torch.tensor("), std::string::npos) << *source;
}

// What a GPU gets: the autotune space (its results cached on disk) and three-pass TF32 dots.
TEST(ModelWriterGoldenTest, LinearReluForTheGpu) {
  ModelWriterOptions options;
  options.kernel.autotune = true;
  options.kernel.dot_precision = "tf32x3";
  Result<passes::PipelineResult> compiled = passes::RunPipeline(Import("linear_relu"), {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  ExpectGoldenSource(WriteModelNew(compiled->graph, compiled->plan, options), "linear_relu_gpu");
}

// With graph replay, forward hands kf_forward (the kernels) to KfGraphReplay, written once per file.
TEST(ModelWriterGoldenTest, LinearReluReplayedAsAGraph) {
  ModelWriterOptions options;
  options.graph_replay = GraphReplay::kAlways;
  Result<passes::PipelineResult> compiled = passes::RunPipeline(Import("linear_relu"), {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  ExpectGoldenSource(WriteModelNew(compiled->graph, compiled->plan, options), "linear_relu_graph_replay");
  options.graph_replay = GraphReplay::kAuto;  // one launch: nothing to save, nothing to measure
  WriteNotes notes;
  Result<std::string> plain = WriteModelNew(compiled->graph, compiled->plan, options, &notes);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->find("KfGraphReplay"), std::string::npos);
  EXPECT_FALSE(notes.replay_undecided);
}

// A forward of a few launches with small inputs is left to measurement: written with direct
// launches, and replayed when the caller asks for the undecided forwards replayed.
TEST(ModelWriterTest, AFewLaunchesLeaveTheReplayToMeasurement) {
  Result<passes::PipelineResult> compiled = passes::RunPipeline(Import("batch_norm_training"), {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  ModelWriterOptions options;
  options.graph_replay = GraphReplay::kAuto;
  WriteNotes notes;
  Result<std::string> direct = WriteModelNew(compiled->graph, compiled->plan, options, &notes);
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  EXPECT_TRUE(notes.replay_undecided);
  EXPECT_EQ(direct->find("KfGraphReplay"), std::string::npos);
  options.replay_undecided = true;
  Result<std::string> replayed = WriteModelNew(compiled->graph, compiled->plan, options);
  ASSERT_TRUE(replayed.ok());
  EXPECT_NE(replayed->find("return self.kf_replay("), std::string::npos) << *replayed;
}

// PyTorch's fused attention (as a capture on a GPU records SDPA) becomes one attention kernel:
// no library call is left.
TEST(ModelWriterTest, FusedAttentionOpIsOneKernel) {
  Result<passes::PipelineResult> compiled = passes::RunPipeline(Import("attention_sdpa_fused"), {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  Result<std::string> source = WriteModelNew(compiled->graph, compiled->plan);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_NE(source->find("@triton.jit\ndef attention"), std::string::npos) << *source;
  EXPECT_EQ(source->find("scaled_dot_product"), std::string::npos) << *source;
}

// A kernel whose tuning key has a measured configuration is emitted with it baked in: no
// autotuner, the launch names the tile and the grid is a number.
TEST(ModelWriterTest, MeasuredConfigurationIsBakedIn) {
  ModelWriterOptions options;
  options.kernel.autotune = true;
  options.kernel.dot_precision = "tf32x3";
  Result<passes::PipelineResult> compiled = passes::RunPipeline(Import("linear_relu"), {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  Result<std::string> autotuned = WriteModelNew(compiled->graph, compiled->plan, options);
  ASSERT_TRUE(autotuned.ok()) << autotuned.status().ToString();
  std::smatch key;
  ASSERT_TRUE(std::regex_search(*autotuned, key, std::regex("# Tuning key of (\\w+): ([0-9a-f]{64})"))) << *autotuned;

  options.kernel.tuned[key[2].str()] = TileChoice{64, 32, 16, 8, 4, 3};
  Result<std::string> baked = WriteModelNew(compiled->graph, compiled->plan, options);
  ASSERT_TRUE(baked.ok()) << baked.status().ToString();
  EXPECT_EQ(baked->find("@triton.autotune"), std::string::npos) << *baked;
  EXPECT_NE(baked->find(key[1].str() + ": tile configuration measured on this GPU (tuning key " + key[2].str()),
            std::string::npos) << *baked;
  EXPECT_NE(baked->find("BLOCK_M=64, BLOCK_N=32, BLOCK_K=16, GROUP_M=8, num_warps=4, num_stages=3"), std::string::npos) << *baked;

  options.kernel.tuned = {{std::string(64, '0'), TileChoice{}}};  // another kernel's: changes nothing
  EXPECT_EQ(WriteModelNew(compiled->graph, compiled->plan, options).value(), *autotuned);
}

// A row folded block by block is autotuned over its block, warps and stages on a GPU, and a
// measured block is baked into its launch; rows held whole in registers keep their fixed sizes,
// as does every row on the CPU interpreter.
TEST(ModelWriterTest, AFoldedRowsBlockIsTunedThenBakedIn) {
  auto row_sum = [](int64_t length) {
    ir::GraphBuilder b("hand/row_sum");
    ir::ValueId x = AddInputOk(b, "x", {4, length});
    ir::ValueId total = AddOk(b, "total", "aten.sum.dim_IntList", {Ref(x), {ir::IntList{1}}, {true}}, {F32({4, 1})});
    b.AddOutput({total, 0});
    return std::move(b).Build();
  };
  ModelWriterOptions options;
  options.kernel.autotune = true;
  const ir::Graph folded = row_sum(100000);
  Result<std::string> autotuned = WriteModelNew(folded, passes::PlanFusion(folded), options);
  ASSERT_TRUE(autotuned.ok()) << autotuned.status().ToString();
  EXPECT_NE(autotuned->find(R"(triton.Config({"R_BLOCK": 1024}, num_warps=4, num_stages=1))"), std::string::npos) << *autotuned;
  EXPECT_NE(autotuned->find(R"(triton.Config({"R_BLOCK": 8192}, num_warps=16, num_stages=3))"), std::string::npos) << *autotuned;
  EXPECT_EQ(autotuned->find("R_BLOCK=8192"), std::string::npos) << *autotuned;  // the launch leaves it to the tuner
  std::smatch key;
  ASSERT_TRUE(std::regex_search(*autotuned, key, std::regex("# Tuning key of (\\w+): ([0-9a-f]{64})"))) << *autotuned;

  TileChoice block;
  block.r_block = 2048;
  block.warps = 8;
  block.stages = 1;
  options.kernel.tuned[key[2].str()] = block;
  Result<std::string> baked = WriteModelNew(folded, passes::PlanFusion(folded), options);
  ASSERT_TRUE(baked.ok()) << baked.status().ToString();
  EXPECT_EQ(baked->find("@triton.autotune"), std::string::npos) << *baked;
  EXPECT_NE(baked->find("R_BLOCK=2048, num_warps=8, num_stages=1)"), std::string::npos) << *baked;

  options.kernel.autotune = false;
  EXPECT_NE(WriteModelNew(folded, passes::PlanFusion(folded), options)->find("R_BLOCK=8192, num_warps=16)"), std::string::npos);
  options.kernel.autotune = true;
  // Four rows of 2^20: split over programs, whose partial kernel is tuned the same way.
  const ir::Graph split = row_sum(int64_t{1} << 20);
  Result<std::string> sliced = WriteModelNew(split, passes::PlanFusion(split), options);
  ASSERT_TRUE(sliced.ok()) << sliced.status().ToString();
  ASSERT_TRUE(std::regex_search(*sliced, key, std::regex("# Tuning key of (\\w+_partial): ([0-9a-f]{64})"))) << *sliced;
  EXPECT_NE(sliced->find(R"(triton.Config({"R_BLOCK": 2048}, num_warps=16, num_stages=1))"), std::string::npos) << *sliced;
  // The decorator stands right above the partial kernel, not above the kernel that combines.
  const std::string decorated = "@triton.jit\ndef " + key[1].str() + "(";
  const size_t decorator = sliced->find("@triton.autotune("), partial = sliced->find(decorated);
  ASSERT_NE(decorator, std::string::npos);
  ASSERT_NE(partial, std::string::npos) << *sliced;
  EXPECT_LT(decorator, partial);
  EXPECT_EQ(sliced->substr(decorator, partial - decorator).find("def "), std::string::npos) << *sliced;
  block.r_block = 1024;
  block.warps = 4;
  block.stages = 3;
  options.kernel.tuned = {{key[2].str(), block}};
  Result<std::string> sliced_baked = WriteModelNew(split, passes::PlanFusion(split), options);
  ASSERT_TRUE(sliced_baked.ok()) << sliced_baked.status().ToString();
  EXPECT_EQ(sliced_baked->find("@triton.autotune"), std::string::npos) << *sliced_baked;
  EXPECT_NE(sliced_baked->find("R_BLOCK=1024, num_warps=4, num_stages=3)"), std::string::npos) << *sliced_baked;

  const ir::Graph whole = row_sum(4000);
  Result<std::string> held = WriteModelNew(whole, passes::PlanFusion(whole), options);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->find("@triton.autotune"), std::string::npos) << *held;
  EXPECT_NE(held->find("R_BLOCK=4096, num_warps=8)"), std::string::npos) << *held;
}

// A matmul's autotuned space follows its dots and its shape: IEEE dots (FMA units) get the tiles
// the H200 ran them fastest in; a product of at most 32 rows gets 32-row tiles, wide ones.
TEST(ModelWriterTest, MatmulTileSpaceFollowsDotPrecisionAndRows) {
  ModelWriterOptions options;
  options.kernel.autotune = true;
  Result<passes::PipelineResult> compiled = passes::RunPipeline(Import("linear_relu"), {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  // linear_relu's product has 8 rows.
  options.kernel.dot_precision = "tf32x3";
  const std::string source = WriteModelNew(compiled->graph, compiled->plan, options).value();
  EXPECT_NE(source.find(R"("BLOCK_M": 32, "BLOCK_N": 256)"), std::string::npos) << source;
  EXPECT_EQ(source.find(R"("BLOCK_M": 64)"), std::string::npos) << source;
  const TileChoice fma = {128, 128, 16, 8, 4, 3};
  const std::vector<TileChoice> ieee = MatmulTileSpace(4096, "ieee"), tf32x3 = MatmulTileSpace(4096, "tf32x3");
  EXPECT_NE(std::find(ieee.begin(), ieee.end(), fma), ieee.end());
  EXPECT_EQ(std::find(tf32x3.begin(), tf32x3.end(), fma), tf32x3.end());
  for (const std::string precision : {"ieee", "tf32x3"}) {
    const std::vector<TileChoice> short_m = MatmulTileSpace(32, precision);
    EXPECT_TRUE(std::all_of(short_m.begin(), short_m.end(), [](const TileChoice& c) { return c.block_m <= 32; })) << precision;
    EXPECT_TRUE(std::any_of(short_m.begin(), short_m.end(), [](const TileChoice& c) { return c.block_n == 256; })) << precision;
    const std::vector<TileChoice> tall = MatmulTileSpace(4096, precision);
    EXPECT_TRUE(std::any_of(tall.begin(), tall.end(), [](const TileChoice& c) { return c.block_m == 128; })) << precision;
  }
}

// The attention kernels' dots can run in another precision than the GEMMs' (the precision ladder's
// middle step): the projections stay in three-pass TF32, the attention kernel's dots are IEEE.
TEST(ModelWriterTest, AttentionDotsTakeTheirOwnPrecision) {
  Result<passes::PipelineResult> compiled = passes::RunPipeline(Import("attention_mingpt_causal"), {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  ModelWriterOptions options;
  options.kernel.dot_precision = "tf32x3";
  options.kernel.attention_dot_precision = "ieee";
  Result<std::string> source = WriteModelNew(compiled->graph, compiled->plan, options);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const size_t attention = source->find("def attention");
  ASSERT_NE(attention, std::string::npos) << *source;
  const size_t end = source->find("\n\n\n", attention);
  const std::string kernel = source->substr(attention, end - attention);
  EXPECT_NE(kernel.find("input_precision=\"ieee\""), std::string::npos) << kernel;
  EXPECT_EQ(kernel.find("tf32x3"), std::string::npos) << kernel;
  const std::string rest = source->substr(0, attention) + source->substr(end);
  EXPECT_NE(rest.find("input_precision=\"tf32x3\""), std::string::npos) << *source;
  EXPECT_EQ(rest.find("input_precision=\"ieee\""), std::string::npos) << *source;
}

// The tuning key names what a kernel computes, not what its IR values are called: the same
// matmul written under other names (the same layer in another network) has the same key, and
// other shapes another.
std::string MatmulTuningKey(const std::string& a_name, const std::string& b_name, const std::string& out_name, int64_t n) {
  ir::GraphBuilder b("hand/" + out_name);
  ir::ValueId a = AddInputOk(b, a_name, {64, 32});
  ir::ValueId w = AddInputOk(b, b_name, {32, n}, 1);
  ir::ValueId mm = AddOk(b, out_name, "aten.mm.default", {Ref(a), Ref(w)}, {F32({64, n})});
  b.AddOutput({mm, 0});
  ir::Graph graph = std::move(b).Build();
  ModelWriterOptions options;
  options.kernel.autotune = true;
  Result<std::string> source = WriteModelNew(graph, passes::PlanFusion(graph), options);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  std::smatch key;
  EXPECT_TRUE(std::regex_search(*source, key, std::regex("# Tuning key of \\w+: ([0-9a-f]{64})"))) << *source;
  return key[1].str();
}

TEST(ModelWriterTest, TuningKeyIgnoresNames) {
  const std::string key = MatmulTuningKey("x", "w", "mm", 48);
  EXPECT_EQ(MatmulTuningKey("features", "weight", "projection", 48), key);
  EXPECT_NE(MatmulTuningKey("x", "w", "mm", 80), key);
}

TEST(ModelWriterGoldenTest, GeluTanhWithBroadcastBias) {
  ir::GraphBuilder b("hand/gelu_tanh_bias");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId bias = AddInputOk(b, "bias", {8}, 1);
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(x), Ref(bias)}, {F32({4, 8})});
  ir::ValueId gelu =
      b.AddOp("gelu", "aten.gelu.default", {Ref(add)}, {{"approximate", ir::Argument{std::string("tanh")}}}, {F32({4, 8})})
          .value();
  b.AddOutput({gelu, 0});
  ExpectGolden(std::move(b).Build(), "gelu_tanh_bias");
}

ir::Graph ErfinvGraph() {
  ir::GraphBuilder b("hand/erfinv");
  ir::ValueId x = AddInputOk(b, "x", {4});
  ir::ValueId erfinv = AddOk(b, "erfinv", "aten.erfinv.default", {Ref(x)}, {F32({4})});
  b.AddOutput({erfinv, 0});
  return std::move(b).Build();
}

TEST(ModelWriterTest, UnsupportedOpIsReportedByName) {
  ir::Graph graph = ErfinvGraph();
  passes::FusionPlan plan = passes::PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 1u);
  Result<PointwiseKernel> kernel = EmitPointwiseKernel(graph, plan.groups[0]);
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("aten.erfinv.default"), std::string::npos) << kernel.status().message();
  Result<std::string> source = WriteModelNew(graph, plan);
  ASSERT_FALSE(source.ok());
  EXPECT_NE(source.status().message().find("%erfinv"), std::string::npos);
}

TEST(ModelWriterTest, FallbackEmitsTheAtenCall) {
  ir::Graph graph = ErfinvGraph();
  ModelWriterOptions options;
  options.fallback_unsupported = true;
  WriteNotes notes;
  Result<std::string> source = WriteModelNew(graph, passes::PlanFusion(graph), options, &notes);
  const NoKernelReasons& no_kernel = notes.no_kernel;
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_NE(source->find("erfinv = torch.ops.aten.erfinv.default(x)"), std::string::npos) << *source;
  EXPECT_EQ(source->find("@triton.jit"), std::string::npos);
  // The reason is handed back for the coverage report, by group.
  ASSERT_EQ(no_kernel.size(), 1u);
  EXPECT_NE(no_kernel.begin()->second.find("aten.erfinv.default"), std::string::npos) << no_kernel.begin()->second;
}

// A parameter forward() decays in place: its write-back is not recorded by autograd, or a
// parameter that requires grad would refuse the in-place copy.
TEST(ModelWriterTest, AParameterIsUpdatedWithoutAutograd) {
  ir::GraphBuilder b("hand/decay");
  ir::ValueId x = AddInputOk(b, "x", {4});
  ir::ValueId scale = b.AddParameter("p_scale", "scale", ir::ParameterKind::kParameter, F32({4})).value();
  ir::ValueId decayed = AddOk(b, "mul", "aten.mul.Tensor", {Ref(scale), {0.5}}, {F32({4})});
  ir::ValueId scaled = AddOk(b, "mul_1", "aten.mul.Tensor", {Ref(x), Ref(decayed)}, {F32({4})});
  b.AddOutput({scaled, 0});
  ASSERT_TRUE(b.AddMutation("scale", {decayed, 0}).ok());
  ir::Graph graph = std::move(b).Build();
  Result<std::string> source = WriteModelNew(graph, passes::PlanFusion(graph));
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_NE(source->find("        # forward() updates scale in place\n"
                         "        with torch.no_grad():\n"
                         "            p_scale.copy_(mul)\n"
                         "\n"
                         "        return mul_1\n"),
            std::string::npos)
      << *source;
}

// A buffer forward() decays, read only by the kernel that computes its new value, element by
// element: the kernel writes it in place (no copy launch). Read by a reduction as well, or
// returned, it keeps its copy.
TEST(ModelWriterTest, ABufferItsKernelReadsElementByElementIsWrittenInPlace) {
  auto write = [](bool summed, bool returned) {
    ir::GraphBuilder b("hand/buffer_decay");
    ir::ValueId x = AddInputOk(b, "x", {4});
    ir::ValueId scale = b.AddParameter("b_scale", "scale", ir::ParameterKind::kBuffer, F32({4})).value();
    ir::ValueId decayed = AddOk(b, "mul", "aten.mul.Tensor", {Ref(scale), {0.5}}, {F32({4})});
    ir::ValueId scaled = AddOk(b, "mul_1", "aten.mul.Tensor", {Ref(x), Ref(decayed)}, {F32({4})});
    b.AddOutput({scaled, 0});
    if (summed) {
      ir::ValueId total = AddOk(b, "total", "aten.sum.dim_IntList", {Ref(scale), {ir::IntList{0}}, {true}}, {F32({1})});
      b.AddOutput({total, 0});
    }
    if (returned) b.AddOutput({decayed, 0});
    EXPECT_TRUE(b.AddMutation("scale", {decayed, 0}).ok());
    ir::Graph graph = std::move(b).Build();
    Result<std::string> source = WriteModelNew(graph, passes::PlanFusion(graph));
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    return source.ok() ? *source : std::string();
  };
  const std::string in_place = write(false, false);
  EXPECT_NE(in_place.find("mul = b_scale  # written in place\n"), std::string::npos) << in_place;
  EXPECT_NE(in_place.find("# b_scale was written in place by the kernel that computes it"), std::string::npos) << in_place;
  EXPECT_EQ(in_place.find("b_scale.copy_("), std::string::npos) << in_place;
  for (const std::string& copied : {write(true, false), write(false, true)}) {
    EXPECT_NE(copied.find("b_scale.copy_(mul)"), std::string::npos) << copied;
    EXPECT_EQ(copied.find("written in place"), std::string::npos) << copied;
  }
}

// Two buffers swapped, as torch.export captures it (a <- clone(b), b <- a): b's new value is a's
// memory, which the first copy overwrites, so it is copied aside before either is written.
TEST(ModelWriterTest, StateAnotherCopyOverwritesIsCopiedAsideFirst) {
  ir::GraphBuilder b("hand/swap");
  ir::ValueId x = AddInputOk(b, "x", {4});
  ir::ValueId a = b.AddParameter("b_a", "a", ir::ParameterKind::kBuffer, F32({4})).value();
  ir::ValueId old_b = b.AddParameter("b_b", "b", ir::ParameterKind::kBuffer, F32({4})).value();
  ir::ValueId clone = AddOk(b, "clone", "aten.clone.default", {Ref(old_b)}, {F32({4})});
  ir::ValueId sum = AddOk(b, "add", "aten.add.Tensor", {Ref(x), Ref(clone)}, {F32({4})});
  b.AddOutput({sum, 0});
  ASSERT_TRUE(b.AddMutation("a", {clone, 0}).ok());
  ASSERT_TRUE(b.AddMutation("b", {a, 0}).ok());
  ir::Graph graph = std::move(b).Build();
  ModelWriterOptions options;
  options.fallback_unsupported = true;
  Result<std::string> source = WriteModelNew(graph, passes::PlanFusion(graph), options);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_NE(source->find("        # forward() updates a, b in place\n"
                         "        kf_old_b_a = b_a.clone()\n"
                         "        b_a.copy_(clone)\n"
                         "        b_b.copy_(kf_old_b_a)\n"),
            std::string::npos)
      << *source;
}

}  // namespace
}  // namespace kforge::codegen
