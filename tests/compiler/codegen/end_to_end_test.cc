// Numeric end-to-end check for every op family and fusion pattern: capture a task with the kforge
// binary, run the pass pipeline, write ModelNew with a kernel for every group (no ATen fallback:
// a group without a kernel fails the test), then run it under the Triton interpreter against the
// task's Model (state dict loaded strictly, both in training mode) for three consecutive calls on
// fresh inputs of two scales, comparing the outputs and every parameter and buffer after each
// call (a training-mode batch norm updates its running statistics) with the case's tolerance.
// Skipped when the kforge binary or the Python venv is missing.
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/codegen/cuda_kernel.h"
#include "compiler/codegen/model_writer.h"
#include "compiler/ir/import_graph.h"
#include "compiler/passes/pipeline.h"
#include "core/files.h"

namespace kforge::codegen {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/opt/kforge/venv/bin/python";

constexpr const char* kDriver = R"PY(import importlib.util
import sys

import torch


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def close(got, want, tolerance):
    # Relative to the tensor's magnitude (sums may be ordered differently); integers exactly.
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if not want.is_floating_point():
        return torch.equal(got, want)
    magnitude = want.double().pow(2).mean().sqrt().item() if want.numel() else 1.0
    return torch.allclose(got, want, rtol=tolerance, atol=tolerance * max(magnitude, 1e-6))


def check(what, got, want, tolerance):
    if not close(got, want, tolerance):
        difference = (got.double() - want.double()).abs().max().item() if got.shape == want.shape else got.shape
        print("MISMATCH", what, "max abs diff", difference, "got", got.flatten()[:4].tolist(), "want", want.flatten()[:4].tolist())
        sys.exit(1)


task = load("task", sys.argv[1])
for key, value in getattr(task, "KFORGE_CPU_SIZES", {}).items():
    setattr(task, key, value)
generated = load("generated", sys.argv[2])
tolerance = float(sys.argv[3])
torch.manual_seed(0)
model = task.Model(*task.get_init_inputs())
model_new = generated.ModelNew(*task.get_init_inputs())
model_new.load_state_dict(model.state_dict(), strict=True)
for call, scale in enumerate((1.0, 10.0, 1.0)):
    # Float tensors and Python floats scaled (a number is an input, not a constant); the rest as given.
    inputs = [x * scale if (torch.is_tensor(x) and x.is_floating_point()) or isinstance(x, float) else x
              for x in task.get_inputs()]
    with torch.no_grad():
        want, got = model(*inputs), model_new(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(want) == len(got), (len(want), len(got))
    for index, (w, g) in enumerate(zip(want, got)):
        check(f"call {call} (scale {scale}) output {index}", g, w, tolerance)
    state, new_state = model.state_dict(), model_new.state_dict()
    assert state.keys() == new_state.keys(), (sorted(state), sorted(new_state))
    for name, value in state.items():
        check(f"call {call} (scale {scale}) {name}", new_state[name], value, tolerance)
print("OK")
)PY";

// The fp32 tolerance of most cases, relative to a tensor's magnitude.
constexpr double kTolerance = 1e-4;

// What a task's plan must show besides matching PyTorch.
struct PlanExpectations {
  // Library groups are allowed only for ops that move or fill data (a split, a copy to a layout,
  // zeros for an initial state).
  bool copies_allowed = false;
  // Ops no group may hold but an attention group (whose kernel computes its bias's gather).
  std::vector<std::string> absent_ops;
  // The number of attention groups.
  int attention_groups = 0;
  // The source must not hold these.
  std::vector<std::string> absent_fragments;
  // Passes the pipeline skips.
  std::set<std::string> disabled_passes;
  // Groups of these kinds are written as ATen calls (after ExpectPlan): the library call of an op
  // of kforge's own, checked against PyTorch.
  std::set<passes::FusionGroup::Kind> as_library;
};

bool MovesOrFillsData(const ir::Graph& graph, const passes::FusionGroup& group) {
  for (ir::ValueId id : group.nodes) {
    const ir::OpKind kind = graph.value(id).As<ir::OpNode>().op_kind();
    if (kind != ir::OpKind::kDataMovement && kind != ir::OpKind::kCreation) return false;
  }
  return true;
}

void ExpectPlan(const ir::Graph& graph, const passes::FusionPlan& plan, const PlanExpectations& expected) {
  int attention = 0;
  for (const passes::FusionGroup& group : plan.groups) {
    attention += group.kind == passes::FusionGroup::Kind::kAttention;
    if (group.kind == passes::FusionGroup::Kind::kLibrary) {
      EXPECT_TRUE(expected.copies_allowed && MovesOrFillsData(graph, group)) << "library group " << group.name;
    }
    for (ir::ValueId id : group.nodes) {
      if (group.kind == passes::FusionGroup::Kind::kAttention) break;
      const std::string& op = graph.value(id).As<ir::OpNode>().op;
      for (const std::string& absent : expected.absent_ops) EXPECT_NE(op, absent) << "in group " << group.name;
    }
  }
  EXPECT_EQ(attention, expected.attention_groups);
}

// The task file `name` names: "levelN/..." a project task; "codegen/..." one of this test's own
// (tests/compiler/codegen/tasks).
fs::path TaskPath(const std::string& name) {
  const fs::path source_dir = KFORGE_SOURCE_DIR;
  return name.rfind("codegen/", 0) == 0 ? source_dir / "tests" / "compiler" / "codegen" / "tasks" / (name.substr(8) + ".py")
                                        : source_dir / "tasks" / (name + ".py");
}

// The task captured on the CPU by the kforge binary (its graph JSON written in `dir`) and planned.
Result<passes::PipelineResult> CaptureAndPlan(const fs::path& binary, const fs::path& task, const fs::path& dir,
                                              const std::set<std::string>& disabled = {}) {
  const fs::path json = dir / "graph.json";
  std::string capture = "'" + binary.string() + "' -q --device cpu --workspace '" + (dir / "ws").string() + "' ir --json '" +
                        task.string() + "' > '" + json.string() + "'";
  if (std::system(capture.c_str()) != 0) return Status::Internal("capture failed: " + capture);
  ASSIGN_OR_RETURN(std::string text, ReadFile(json));
  ASSIGN_OR_RETURN(ir::Graph graph, ir::ImportGraphText(text, json.string()));
  passes::PipelineOptions options;
  options.disabled = disabled;
  return passes::RunPipeline(std::move(graph), options);
}

// Writes ModelNew for the task `name` with `options`, checks that its source holds each of
// `fragments`, and runs the driver on it with `tolerance`.
void ExpectMatchesPyTorch(const std::string& name, const ModelWriterOptions& options,
                          const std::vector<std::string>& fragments = {}, double tolerance = kTolerance,
                          const PlanExpectations& expected = {}) {
  const fs::path binary = fs::path(KFORGE_SOURCE_DIR) / "build" / "kforge";
  if (!fs::exists(binary)) GTEST_SKIP() << "no kforge binary at " << binary;
  if (!fs::exists(kPython)) GTEST_SKIP() << "no python at " << kPython;
  const fs::path task = TaskPath(name);
  ASSERT_TRUE(fs::exists(task)) << task;

  Result<fs::path> dir = MakeTempDir(fs::temp_directory_path(), "kforge_codegen_e2e");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  Result<passes::PipelineResult> planned = CaptureAndPlan(binary, task, *dir, expected.disabled_passes);
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  ExpectPlan(planned->graph, planned->plan, expected);
  for (passes::FusionGroup& group : planned->plan.groups) {
    if (expected.as_library.count(group.kind)) group.kind = passes::FusionGroup::Kind::kLibrary;
  }
  Result<std::string> model = WriteModelNew(planned->graph, planned->plan, options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  for (const std::string& fragment : fragments) EXPECT_NE(model->find(fragment), std::string::npos) << fragment << "\n--- model_new.py ---\n" << *model;
  for (const std::string& fragment : expected.absent_fragments) EXPECT_EQ(model->find(fragment), std::string::npos) << fragment;
  ASSERT_TRUE(WriteFile(*dir / "model_new.py", *model).ok());
  ASSERT_TRUE(WriteFile(*dir / "driver.py", kDriver).ok());

  const fs::path log = *dir / "driver.log";
  std::string run = "cd '" + dir->string() + "' && TRITON_INTERPRET=1 " + kPython + " driver.py '" + task.string() +
                    "' model_new.py " + fmt::format("{}", tolerance) + " > driver.log 2>&1";
  int rc = std::system(run.c_str());
  Result<std::string> logged = ReadFile(log);
  std::string output = logged.ok() ? *logged : "";
  EXPECT_EQ(rc, 0) << output << "\n--- model_new.py ---\n" << *model;
  EXPECT_NE(output.find("OK"), std::string::npos) << output;
  if (rc == 0) RemoveTreeQuietly(*dir);
}

// Runs one of this folder's scripts in `dir` on the task `name` and the model_new.py there, with
// `flags` after them; its exit status and what it printed (stdout and stderr, also left in `log`).
struct ScriptRun {
  int rc = 0;
  std::string output;
};
ScriptRun RunScript(const fs::path& dir, const std::string& script, const std::string& name, const std::string& flags,
                    const std::string& log) {
  const fs::path path = fs::path(KFORGE_SOURCE_DIR) / "tests" / "compiler" / "codegen" / script;
  const std::string run = "cd '" + dir.string() + "' && " + kPython + " '" + path.string() + "' '" + TaskPath(name).string() +
                          "' model_new.py " + flags + " > " + log + " 2>&1";
  ScriptRun result;
  result.rc = std::system(run.c_str());
  Result<std::string> logged = ReadFile(dir / log);
  result.output = logged.ok() ? *logged : "";
  return result;
}

// Writes ModelNew for the task `name` as for a GPU (every tiled kernel autotuned over its
// configuration space) and compiles every kernel it launches, in every configuration, for Hopper
// (sm_90) through Triton's compiler and ptxas, checking shared memory and grid limits
// (compile_for_gpu.py): what the interpreter cannot tell.
// With `static_checks`, the file must also pass the evaluator's static checks (no finding).
void ExpectCompilesForHopper(const std::string& name, ModelWriterOptions options,
                             const std::vector<std::string>& fragments = {}, bool static_checks = false,
                             const std::string& log_pattern = "") {
  const fs::path binary = fs::path(KFORGE_SOURCE_DIR) / "build" / "kforge";
  if (!fs::exists(binary)) GTEST_SKIP() << "no kforge binary at " << binary;
  if (!fs::exists(kPython)) GTEST_SKIP() << "no python at " << kPython;
  Result<fs::path> dir = MakeTempDir(fs::temp_directory_path(), "kforge_codegen_sm90");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  Result<passes::PipelineResult> planned = CaptureAndPlan(binary, TaskPath(name), *dir);
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  options.kernel.autotune = true;
  WriteNotes notes;
  Result<std::string> model = WriteModelNew(planned->graph, planned->plan, options, &notes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  for (const std::string& fragment : fragments) EXPECT_NE(model->find(fragment), std::string::npos) << fragment << "\n--- model_new.py ---\n" << *model;
  ASSERT_TRUE(WriteFile(*dir / "model_new.py", *model).ok());
  // Every tile the tuner may measure compiles too.
  Json tuning = Json::array();
  for (const CudaTuning& job : notes.cuda_tuning) tuning.push_back(CudaTuningToJson(job));
  ASSERT_TRUE(WriteFile(*dir / "tuning.json", tuning.dump()).ok());
  const auto [rc, output] = RunScript(*dir, "compile_for_gpu.py", name, "--arch 90 --tuning tuning.json", "compile.log");
  EXPECT_EQ(rc, 0) << output << "\n--- model_new.py ---\n" << *model;
  EXPECT_NE(output.find(" 0 failed"), std::string::npos) << output;
  if (!notes.cuda_tuning.empty()) EXPECT_NE(output.find(", for the tuner]: ok"), std::string::npos) << output;
  if (!log_pattern.empty()) EXPECT_TRUE(std::regex_search(output, std::regex(log_pattern))) << log_pattern << "\n" << output;
  if (static_checks) {
    const std::string check = "cd '" + dir->string() + "' && PYTHONPATH='" + std::string(KFORGE_SOURCE_DIR) + "/python' " + kPython +
                              " -c 'from kforge_worker.static_checks import analyze_candidate; "
                              "print([str(f) for f in analyze_candidate(open(\"model_new.py\").read())])' > checks.log 2>&1";
    ASSERT_EQ(std::system(check.c_str()), 0);
    Result<std::string> findings = ReadFile(*dir / "checks.log");
    ASSERT_TRUE(findings.ok());
    EXPECT_EQ(*findings, "[]\n") << *model;
  }
  if (rc == 0) RemoveTreeQuietly(*dir);
}

// A task and its tolerance; a bare task name converts to a case at kTolerance.
struct EndToEndCase {
  EndToEndCase(const char* task_name, double case_tolerance = kTolerance) : task(task_name), tolerance(case_tolerance) {}
  const char* task;
  double tolerance;
};

void PrintTo(const EndToEndCase& c, std::ostream* os) { *os << c.task << " (tolerance " << c.tolerance << ")"; }

std::string TestName(const ::testing::TestParamInfo<EndToEndCase>& info) {
  std::string name = info.param.task;
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

class EndToEndTest : public ::testing::TestWithParam<EndToEndCase> {};

TEST_P(EndToEndTest, MatchesPyTorchUnderTheInterpreter) {
  ExpectMatchesPyTorch(GetParam().task, ModelWriterOptions{}, {}, GetParam().tolerance);
}

// Depthwise convolutions, each program one (image, channel) plane with its channel's weights as
// scalars: strided with a bias and a per-channel epilogue, dilated and asymmetric with a residual,
// and planes smaller than a program.
TEST(DepthwisePlanesEndToEndTest, MatchesPyTorchUnderTheInterpreter) {
  ExpectMatchesPyTorch("codegen/depthwise_planes", ModelWriterOptions{},
                       {"kf_c0 = tl.program_id(1)", "(triton.cdiv(42, 64), 6, 3)", "(triton.cdiv(6, 32), 6, 3)",
                        "kf_acc += tl.load(kf_bias_ptr + kf_c0)"});
}

// The channels-last and subpixel convolution layouts, which only large convolutions take: forced
// on with a zero FLOP threshold (the tasks' CPU sizes of level2/07 have too few channels).
// Small convolutions in direct form, beside one that stays an implicit GEMM.
TEST(DirectConvolutionEndToEndTest, MatchesPyTorchUnderTheInterpreter) {
  ExpectMatchesPyTorch("codegen/conv_direct", ModelWriterOptions{},
                       {"# Direct convolution", "# Direct transposed convolution", "# Implicit GEMM"});
}

// A convolution that offers the tuner both forms runs its direct one without autotuning: forced
// on at every size (on a GPU only those over 2^20 output positions offer it).
TEST(DirectConvolutionEndToEndTest, EitherFormKernelsRunDirectlyUnderTheInterpreter) {
  ModelWriterOptions options;
  options.kernel.direct_min_positions = 0;
  ExpectMatchesPyTorch("codegen/conv_fma_or_dot", options, {"if DIRECT:", "DIRECT=1", "# Implicit GEMM: 112 x 20 x 288"});
}

// On a GPU the autotuner measures both forms, and a measured direct configuration is baked in
// with DIRECT=1 in its launch.
TEST(DirectConvolutionEndToEndTest, TheTunerMeasuresBothFormsAndBakesTheDirectOne) {
  const fs::path binary = fs::path(KFORGE_SOURCE_DIR) / "build" / "kforge";
  if (!fs::exists(binary)) GTEST_SKIP() << "no kforge binary at " << binary;
  Result<fs::path> dir = MakeTempDir(fs::temp_directory_path(), "kforge_codegen_e2e");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  Result<passes::PipelineResult> planned = CaptureAndPlan(binary, TaskPath("codegen/conv_fma_or_dot"), *dir);
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  ModelWriterOptions options;
  options.kernel.autotune = true;
  options.kernel.direct_min_positions = 0;
  Result<std::string> autotuned = WriteModelNew(planned->graph, planned->plan, options);
  ASSERT_TRUE(autotuned.ok()) << autotuned.status().ToString();
  EXPECT_NE(autotuned->find("\"BLOCK_M\": 256, \"BLOCK_N\": 32, \"BLOCK_K\": 16, \"GROUP_M\": 8, \"DIRECT\": 1}, num_warps=8"),
            std::string::npos) << *autotuned;
  EXPECT_NE(autotuned->find("\"BLOCK_K\": 32, \"GROUP_M\": 8, \"DIRECT\": 0}"), std::string::npos);
  TileChoice direct{256, 32, 16, 8, 8, 1};
  direct.direct = true;
  const std::regex key("# Tuning key of \\w+: ([0-9a-f]{64})");
  for (auto it = std::sregex_iterator(autotuned->begin(), autotuned->end(), key); it != std::sregex_iterator(); ++it) {
    options.kernel.tuned[(*it)[1].str()] = direct;
  }
  ASSERT_FALSE(options.kernel.tuned.empty()) << *autotuned;
  Result<std::string> baked = WriteModelNew(planned->graph, planned->plan, options);
  ASSERT_TRUE(baked.ok()) << baked.status().ToString();
  EXPECT_EQ(baked->find("@triton.autotune"), std::string::npos) << *baked;
  EXPECT_NE(baked->find("BLOCK_M=256, BLOCK_N=32, BLOCK_K=16, GROUP_M=8, num_warps=8, num_stages=1, DIRECT=1"), std::string::npos)
      << *baked;
  RemoveTreeQuietly(*dir);
}

ModelWriterOptions RelayoutAlways() {
  ModelWriterOptions options;
  options.kernel.relayout_min_flops = 0;
  return options;
}

TEST(RelayoutEndToEndTest, StridedGroupedAndTransposedConvolutions) {
  ExpectMatchesPyTorch("codegen/conv_relayout", RelayoutAlways(), {"_kf_channels_last[", "_kf_taps_outside[", "Subpixel form"});
}

// Few input channels: the input rewritten channels-last with its padding written out and its
// channels padded to 4 (or 8, 12), each kernel row one contiguous span; a convolution dilated
// along its last dim stays in place (its flat K loop).
TEST(RelayoutEndToEndTest, FewChannelsReadAsPaddedRows) {
  PlanExpectations expected;
  expected.absent_fragments = {"contiguous span of 4 taps"};  // a single tap along the last dim stays in place
  ExpectMatchesPyTorch("codegen/conv_padded_rows", RelayoutAlways(),
                       {"_kf_padded_channels_last[", "# Padded rows: the input is read channels-last, padded in space and to 4 channels",
                        "to 8 channels", "to 12 channels", "each of the 7 kernel rows is one contiguous span of 28",
                        "each of the 11 kernel rows is one contiguous span of 44", "Implicit GEMM: 2178 x 48 x 27",
                        "Implicit GEMM: 231 x 20 x 27"},
                       kTolerance, expected);
}

// Every padded-rows configuration compiles for Hopper, and a span that 16-wide K slices cover
// with less rounding (AlexNet's 44, a 3x3 kernel's 12) is offered them beside the 32s. Compiled
// as a launch specializes it (16-byte aligned pointers), the stem's kernel reads its operands
// 16 bytes at a time, which is what the layout is for.
TEST(RelayoutEndToEndTest, PaddedRowsCompileForHopperWithSixteenWideSlicesForShortSpans) {
  ExpectCompilesForHopper("codegen/conv_padded_rows", RelayoutAlways(),
                          {"\"BLOCK_M\": 128, \"BLOCK_N\": 128, \"BLOCK_K\": 16, \"GROUP_M\": 8}, num_warps=8, num_stages=3"},
                          /*static_checks=*/false,
                          R"(conv_convolution_relu_mul \[BLOCK_K=32 BLOCK_M=128 BLOCK_N=128[^\n]*: ok \([^\n]*, [1-9][0-9]* 16-byte global reads\))");
}

// Concatenations written in place: a dense block's growing cats views of one buffer that each
// layer's convolution writes its slice of (the block's input copied in once), a fire module's and
// an inception module's branches written into their slices, a part read elsewhere too copied in,
// two pointwise results of one kernel side by side along the last dim, and two statistics a
// reduction kernel computes (copied in: it stores them dense).
TEST(ConcatenationEndToEndTest, PartsAreWrittenIntoTheirSlicesOfOneBuffer) {
  PlanExpectations expected;
  expected.copies_allowed = true;  // the cats, now views and copies into the buffer
  ExpectMatchesPyTorch("codegen/concatenations", ModelWriterOptions{},
                       {"cat_2 = torch.empty((2, 18, 7, 5)", "convolution = cat_2.narrow(1, 6, 4)  # written in place",
                        "cat_2.narrow(1, 0, 6).copy_(x)", "cat = cat_2.narrow(1, 0, 10)  # its leading slice",
                        "cat_1 = cat_2.narrow(1, 0, 14)  # its leading slice", "relu_5 = cat_3.narrow(1, 5, 7)  # written in place",
                        "convolution_8 = cat_4.narrow(1, 10, 3)  # written in place", "cat_5.narrow(1, 0, 13).copy_(tanh)",
                        "relu_6 = cat_7.narrow(3, 5, 5)  # written in place", "# concatenation cat_5: a view of its buffer",
                        // Statistics a reduction kernel stores dense at their flat index: copied in.
                        "mul_2 = torch.empty((2, 6, 1, 1)", "cat_6.narrow(1, 0, 6).copy_(mul_2)"},
                       kTolerance, expected);
}

// The same with every convolution relaying its input out first: the fire module's squeeze reads
// the dense block's second cat (14 of the buffer's 18 channels) as padded rows, through the
// buffer's image stride.
TEST(ConcatenationEndToEndTest, RelaidConvolutionsReadTheLeadingSlices) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  ExpectMatchesPyTorch("codegen/concatenations", RelayoutAlways(),
                       {"cat_1 = cat_2.narrow(1, 0, 14)  # its leading slice",
                        "_kf_padded_channels_last[(triton.cdiv(2016, 1024),)](cat_1, conv_convolution_3_relu_3_x, 630, 35, 14,"},
                       kTolerance, expected);
}

TEST(ConcatenationEndToEndTest, WithThePassDisabledEveryCatCopies) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  expected.disabled_passes = {"concatenations"};
  expected.absent_fragments = {"cat_2.narrow(", "its leading slice", "# concatenation"};
  ExpectMatchesPyTorch("codegen/concatenations", ModelWriterOptions{}, {"torch.ops.aten.cat.default([x, convolution], 1)"}, kTolerance,
                       expected);
}

TEST(RelayoutEndToEndTest, ConvolutionWithAnEpilogue) {
  ExpectMatchesPyTorch("codegen/conv_flat_taps", RelayoutAlways(), {"_kf_channels_last[", "_kf_taps_outside["});
}

// The transcendental helpers keep their relative accuracy down to 1e-8 (expm1(x) / x, tanh(x) / x
// and mish(x) / x are near a constant there), at 2e-6.
TEST(TranscendentalsEndToEndTest, KeepRelativeAccuracyNearZero) {
  ExpectMatchesPyTorch("codegen/transcendentals", ModelWriterOptions{},
                       {"def _kf_expm1", "def _kf_tanh", "_kf_tanh_softplus(x)"}, 2e-6);
}

// Norms over rows long enough to split: the statistics come from per-slice Welford summaries
// merged with Chan's formula (inputs far from zero, where a sum of squares would fail), and the
// normalization is one pointwise pass, which loads the row's statistics and the channel's weight
// and bias once per program.
TEST(SplitStatisticsEndToEndTest, GroupNorm) {
  ExpectMatchesPyTorch("codegen/split_group_norm", ModelWriterOptions{},
                       {"tl.sum(kf_sn_", "_partial[(32,)]", "if 32768 % BLOCK_SIZE == 0:"});
}

// A training batch norm over few channels and many rows (NetVLAD's): the centered values are
// stored by the variance's partial programs, each over its slice, so that reduction is split too
// rather than one program folding every row.
TEST(SplitStatisticsEndToEndTest, BatchNormStoringCenteredValues) {
  ExpectMatchesPyTorch("codegen/split_batch_norm", ModelWriterOptions{},
                       {"_centered_to__native_batch_norm_legit_functional_updated_1_partial[(", "_centered_ptr + ", "C_BLOCK=4"});
}

// The innermost dim kept (channels over rows): each slice reads [rows, channels] tiles along the
// rows and stores a partial result per channel, 48 channels in a tile of 64. The softmax after it
// reduces short rows along the innermost dim: 64 rows per program, not one (2049 programs).
TEST(SplitStatisticsEndToEndTest, ChannelsAlongTheRowsInColumnTiles) {
  ExpectMatchesPyTorch("codegen/split_column_norm", ModelWriterOptions{},
                       {"kf_row = (kf_pid // 513) * C_BLOCK + tl.arange(0, C_BLOCK)", "kf_kmask = kf_row < 48",
                        "mask=kf_kmask)", "kf_row * 513 + kf_part", "C_BLOCK=64, num_warps=4",
                        "[(2049,)]", "C_BLOCK=64 neighbouring kept elements per program"});
}

// A training batch norm after a 1x1 pool reduces dims of size 1 beside the batch: its input is
// in the full space though its shape is the kept one too, and the statistics are a kernel.
TEST(SplitStatisticsEndToEndTest, BatchNormAfterAOneByOnePool) {
  ExpectMatchesPyTorch("codegen/batch_norm_after_pool", ModelWriterOptions{}, {"kf_i2 * 0"});
}

// Group norm's affine and the pointwise ops after it run in the norm's [N, group, C/group, H*W]
// view, in its statistics kernel; an op whose operand cannot be viewed so (a row over W alone)
// stays a pass of its own after the view back.
TEST(GroupNormEndToEndTest, TheTailJoinsTheStatisticsKernelUntilAnOperandCannotBeRegrouped) {
  ExpectMatchesPyTorch("codegen/group_norm_tail", ModelWriterOptions{},
                       {"reduction native_group_norm_sum_to_div:", "view mul_regrouped", "view add_regrouped",
                        "view div_ungrouped", "pointwise div_1:"});
}

TEST(SplitStatisticsEndToEndTest, LayerNorm) {
  ExpectMatchesPyTorch("codegen/split_layer_norm", ModelWriterOptions{}, {"tl.sum(kf_sn_", "_partial[(32,)]"});
}

// Attention in each form the attention pass recognizes becomes one flash-attention kernel: no bmm,
// softmax or gather is left, as a kernel or an ATen call (the splits and layout copies around it
// may stay ATen calls, which move data).
class AttentionEndToEndTest : public ::testing::TestWithParam<const char*> {};

TEST_P(AttentionEndToEndTest, IsOneKernelAndMatchesPyTorch) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  expected.absent_ops = {"aten.bmm.default", "aten._softmax.default", "aten.amax.default", "aten.index.Tensor"};
  expected.attention_groups = 1;
  expected.absent_fragments = {"aten.bmm", "aten._softmax", "aten.index", "kforge.attention"};
  ExpectMatchesPyTorch(std::string("codegen/") + GetParam(), ModelWriterOptions{}, {"tl.dot(kf_p, kf_v"}, kTolerance, expected);
}

INSTANTIATE_TEST_SUITE_P(Forms, AttentionEndToEndTest,
                         ::testing::Values("attention_mingpt_causal", "attention_sdpa_causal", "attention_sdpa_scaled",
                                           "attention_sdpa_float_mask", "attention_sdpa_bool_mask", "attention_bias_div",
                                           "attention_relpos_buffer", "attention_relpos_clamp", "attention_cross"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

// minGPT's `y.transpose(1, 2).contiguous()` after the attention: the kernel stores y in the
// copy's layout, so the transposed view is contiguous and no copy is made.
TEST(AttentionEndToEndTest, StoresItsResultInTheLayoutItIsCopiedTo) {
  PlanExpectations expected;
  expected.copies_allowed = true;  // the split of q, k and v (views)
  expected.attention_groups = 1;
  expected.absent_ops = {"aten.clone.default"};
  expected.absent_fragments = {"aten.clone"};
  ExpectMatchesPyTorch("codegen/attention_mingpt_causal", ModelWriterOptions{},
                       {"attention = torch.empty_strided((2, 2, 37, 24), (1776, 24, 48, 1)"}, kTolerance, expected);
}

// A head dim that is not a power of two is taken in power-of-two parts, one dot each: 100 as
// 64 + 32 + 16 (the last masked past 100), 96 as 64 + 32 with no mask and no padded column.
TEST(AttentionEndToEndTest, HeadDimsInPowerOfTwoParts) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  expected.attention_groups = 1;
  expected.absent_fragments = {"kf_e2", "kf_e1[None, :] < 96"};
  ExpectMatchesPyTorch("codegen/attention_head_parts", ModelWriterOptions{},
                       {"kf_d1 = 64 + tl.arange(0, 32)", "kf_d2 = 96 + tl.arange(0, 16)", "(kf_d2[None, :] < 100)",
                        "kf_e1 = 64 + tl.arange(0, 32)", "tl.dot(kf_q2, kf_kt2"},
                       kTolerance, expected);
}

// Softmax over rows longer than the registers hold: the sum of exponentials is folded online in
// the max's pass (a running max per lane and a sum rescaled to it), so each row is read twice
// (max and sum, then the output), not three times; log-softmax alike, and in column tiles.
TEST(LongSoftmaxEndToEndTest, FoldsTheSumOnlineAndMatchesPyTorch) {
  PlanExpectations expected;
  ExpectMatchesPyTorch("codegen/long_softmax", ModelWriterOptions{},
                       {"kf_new_", "tl.exp(kf_acc_", "folded R_BLOCK at a time", "[None, :])), axis=0)"}, kTolerance,
                       expected);
}

// A one-element parameter is one scalar load in every kernel kind: Triton's compiler (not the
// interpreter) refuses a block mask on a scalar pointer.
TEST(ScalarParameterEndToEndTest, IsAnUnmaskedScalarLoad) {
  PlanExpectations expected;
  expected.absent_fragments = {"_ptr + 0, mask", "_ptr + 0)", "_base, mask"};
  ExpectMatchesPyTorch("codegen/scalar_parameters", ModelWriterOptions{},
                       {"p_scale = tl.load(p_scale_ptr)", "p_gain = tl.load(p_gain_ptr)"}, kTolerance, expected);
}

// A computed value in a permuted layout is written in it and read by it (NetVLAD's tail): the
// flattening of the permuted aggregate is a copy, which moves data.
TEST(PermutedLayoutEndToEndTest, KernelsWriteTheCapturedLayoutAndMatchPyTorch) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  ExpectMatchesPyTorch("codegen/permuted_layouts", ModelWriterOptions{}, {"torch.empty_strided("}, kTolerance, expected);
}

// Einsums over chunked sequences (Mamba2): no operand is copied contiguous before its product; the
// products read them through their strides over batch dims that do not merge, and the permuted
// sum the reshape copies is written contiguous.
TEST(EinsumChunksEndToEndTest, ProductsReadPermutedOperandsWithoutCopiesAndMatchPyTorch) {
  PlanExpectations expected;
  expected.absent_ops = {"aten.clone.default"};
  expected.absent_fragments = {"aten.clone", "aten.bmm", "aten.matmul"};
  ExpectMatchesPyTorch("codegen/einsum_chunks", ModelWriterOptions{}, {"kf_b0 = (kf_batch // 4)", "kf_b1 = kf_batch % 4"},
                       kTolerance, expected);
}

// A product read transposed by the pointwise op after it stores its result column-major (where
// the op does not run as its epilogue).
TEST(TransposedProductEndToEndTest, StoresColumnMajorForItsReaderAndMatchesPyTorch) {
  PlanExpectations expected;
  expected.absent_ops = {"aten.clone.default"};
  expected.absent_fragments = {"aten.clone", "aten.bmm"};
  expected.disabled_passes = {"epilogues"};
  ExpectMatchesPyTorch("codegen/transposed_product", ModelWriterOptions{},
                       {"torch.empty_strided((6, 20, 12), (240, 1, 20)", "add = torch.empty((2, 3, 12, 20)"}, kTolerance,
                       expected);
}

// The same sum as the product's epilogue: computed over the product's [6, 20, 12], stored where
// the contiguous [2, 3, 12, 20] result keeps each element (along the product's rows).
TEST(TransposedProductEndToEndTest, RunsTheSumAsTheProductsEpilogueAndMatchesPyTorch) {
  PlanExpectations expected;
  expected.absent_ops = {"aten.clone.default"};
  expected.absent_fragments = {"aten.clone", "aten.bmm", "fused_add"};
  ExpectMatchesPyTorch("codegen/transposed_product", ModelWriterOptions{},
                       {"# matmul bmm_add_epilogue: %bmm, %add_epilogue -> one Triton kernel",
                        "add_epilogue = torch.empty_strided((6, 20, 12), (240, 1, 20)"},
                       kTolerance, expected);
}

// Pointwise ops reading products through views (Mamba2's decay mask, its off-diagonal decay and
// the sum of the two outputs; a GELU written out and a residual sum after a linear layer viewed
// 3-D) run as the epilogues of the products they read, the mask's exponentials recomputed there
// from the cumulative sums; no pointwise kernel runs over a product's shape, and the layer norm
// after the residual sum stays one reduction kernel.
TEST(ProductEpiloguesEndToEndTest, PointwiseOpsThroughViewsRunInTheProductsKernelsAndMatchPyTorch) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  expected.absent_ops = {"aten.clone.default"};
  expected.absent_fragments = {"fused_mul", "fused_add", "fused_sub_to_exp", "fused_pow", "fused_tanh", "_centered_epilogue"};
  ExpectMatchesPyTorch("codegen/product_epilogues", ModelWriterOptions{},
                       {"exp_over_bmm_strided = tl.exp(where_over_bmm_strided)", "mul_epilogue = bmm_strided_split * exp_over_bmm_strided",
                        "# matmul bmm_1_strided_add_epilogue", "%tanh_epilogue, %add_2_epilogue, %mul_5_epilogue, %add_3_epilogue",
                        "# reduction native_layer_norm_sum_to_native_layer_norm_normed", "torch.ops.aten.as_strided.default("},
                       kTolerance, expected);
}

// Products of at most 8 K steps are K exact fp32 FMAs per output, in tiles as short as their M.
TEST(ShortKProductsEndToEndTest, RunAsFmasAndMatchPyTorch) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  expected.absent_fragments = {"aten.bmm", "aten.mm", "aten.matmul"};
  ExpectMatchesPyTorch("codegen/short_k_products", ModelWriterOptions{},
                       {"for kf_k in tl.static_range(3):", "for kf_k in tl.static_range(1):", "for kf_k in tl.static_range(8):",
                        "kf_acc += kf_a_col[:, None] * kf_b_row[None, :]", "BLOCK_M=4", "BLOCK_M=32"},
                       kTolerance, expected);
}

// GEMMs of few tiles over a long K split it over programs (SPLIT_K along grid axis 2); the second
// launch sums the parts' partial tiles and runs the epilogue. Parts of unequal length (K = 2000 in
// 32-wide slices, 27 channel blocks of taps in 4 parts), batches along axis 1, both convolution
// loops; and the same kernels unsplit (SPLIT_K = 1: one launch, the epilogue in it).
TEST(SplitKEndToEndTest, PartsSumToThePyTorchResult) {
  ModelWriterOptions options;
  options.kernel.fixed_split_k = 4;
  ExpectMatchesPyTorch("codegen/split_k", options,
                       {"kf_lo = tl.program_id(2) * kf_part", "for kf_kk in range(kf_lo, kf_hi):",
                        "for kf_k0 in range(kf_lo * BLOCK_K, tl.minimum(kf_hi * BLOCK_K, 2000), BLOCK_K):",
                        "SPLIT_K=4, REDUCE=0)", "SPLIT_K=4, REDUCE=1)", "if REDUCE == (SPLIT_K > 1):",
                        "torch.empty((3840,), dtype=torch.float32"});
}

TEST(SplitKEndToEndTest, UnsplitKernelsLaunchOnce) {
  PlanExpectations expected;
  expected.absent_fragments = {"REDUCE=1"};
  ExpectMatchesPyTorch("codegen/split_k", ModelWriterOptions{}, {"SPLIT_K=1, REDUCE=0)"}, kTolerance, expected);
}

// The split-K kernels' autotuned spaces (split and whole configurations, both launches) compile
// for Hopper: the constexpr branches fold, and no configuration exceeds shared memory.
TEST(SplitKEndToEndTest, EveryConfigurationCompilesForHopper) {
  ExpectCompilesForHopper("codegen/split_k", ModelWriterOptions{}, {"\"SPLIT_K\": 2", "meta[\"SPLIT_K\"])]("});
}

// Each kernel form's autotuned space compiles for Hopper: GEMMs with epilogues, convolutions in
// every loop and layout, attention with a gathered bias and a head dim in parts, FMA products,
// scans and split reductions.
class HopperCompileTest : public ::testing::TestWithParam<EndToEndCase> {};

TEST_P(HopperCompileTest, EveryKernelInEveryConfigurationCompiles) {
  ModelWriterOptions options;
  options.kernel.relayout_min_flops = 0;  // the channels-last and subpixel forms at CPU sizes
  ExpectCompilesForHopper(GetParam().task, options);
}

INSTANTIATE_TEST_SUITE_P(Forms, HopperCompileTest,
                         ::testing::Values("level2/06_gemm_groupnorm_swish", "level3/03_resnet_basic_block", "level1/16_conv_transpose2d",
                                           "codegen/conv_fma_or_dot", "codegen/depthwise_planes", "codegen/attention_relpos_clamp",
                                           "codegen/attention_head_parts", "codegen/short_k_products", "codegen/scans",
                                           "codegen/split_norm", "codegen/split_column_norm", "codegen/product_epilogues",
                                           "codegen/recurrent_layers", "codegen/recurrent_stacks", "codegen/group_norm_tail",
                                           "codegen/long_softmax"),
                         TestName);

// Under IEEE dots on a GPU, a product whose epilogue is at most a bias is a CUDA C++ FMA kernel
// (the linear layer, the product of the tanh'd scores and v); one with an activation after it
// stays a Triton kernel. Each compiles for Hopper (the CUDA ones through NVRTC, as on the GPU).
TEST(CudaKernelsEndToEndTest, BiasOnlyProductsAreCudaKernels) {
  ModelWriterOptions options;
  options.kernel.cuda_ieee_kernels = true;
  ExpectCompilesForHopper("codegen/cuda_products", options,
                          {"matmul_addmm_mm_addmm_out = KfCudaKernel(\"matmul_addmm_mm_addmm_out\", 256, r\"\"\"",
                           "const float* __restrict__ bias", "fmaf(fa[i], fb[j], acc[i][j])", "matmul_bmm_1 = KfCudaKernel(", "matmul_bmm_1[(1, 1, 2)](", "tl.dot(",
                           "-> one CUDA C++ kernel", "kernel = torch.cuda._compile_kernel(self.source, self.name)",
                           "# Tuning key of matmul_addmm_mm_addmm_out: "});
}

// A linear layer over a permuted view (matmul's bmm of 2 rows by a weight expanded over 24
// batches) runs along the batches: 24 rows for each of the 2 images, in the Triton kernel (under
// the interpreter, against PyTorch) and in the CUDA one (compiled for Hopper).
TEST(BroadcastProductEndToEndTest, RunsAlongTheBatchDimTheWeightIsExpandedOver) {
  ExpectMatchesPyTorch("codegen/broadcast_products", ModelWriterOptions{}, {"# 2 batches of 24 x 96 x 40 (M x N x K)"});
  ModelWriterOptions options;
  options.kernel.cuda_ieee_kernels = true;
  ExpectCompilesForHopper("codegen/broadcast_products", options,
                          {"// 2 batches of 24 x 96 x 40 (M x N x K) fp32 product plus a bias along N", "-> one CUDA C++ kernel"});
}

// Attention of every recognized form is a CUDA flash-attention kernel under IEEE dots on a GPU;
// a bias is first written at its own shape by a Triton kernel (minGPT's mask from its buffer, a
// relative-position table gathered by clamped index arithmetic). The file compiles for Hopper and
// passes the evaluator's static checks (torch.cuda._compile_kernel builds a kernel).
class CudaAttentionEndToEndTest : public ::testing::TestWithParam<EndToEndCase> {};

TEST_P(CudaAttentionEndToEndTest, IsACudaKernelThatCompilesAndPassesTheStaticChecks) {
  ModelWriterOptions options;
  options.kernel.cuda_ieee_kernels = true;
  ExpectCompilesForHopper(GetParam().task, options, {"= KfCudaKernel(\"attention_", "__syncthreads", "-> one CUDA C++ kernel"},
                          /*static_checks=*/true);
}

INSTANTIATE_TEST_SUITE_P(Forms, CudaAttentionEndToEndTest,
                         ::testing::Values("codegen/attention_mingpt_causal", "codegen/attention_sdpa_causal",
                                           "codegen/attention_relpos_clamp", "codegen/attention_head_parts",
                                           "codegen/attention_sdpa_bool_mask", "codegen/attention_cross"),
                         TestName);

// The tile flags a CUDA attention's bias kernel writes beside the bias, its Triton kernel run on the
// CPU (attention_bias_tiles.py checks them against the bias it wrote): minGPT's causal mask over
// 37 keys is 2 x 2 tiles, the one of queries 0-31 and keys 32-36 all -inf; the relative-position
// bias has no -inf.
TEST(CudaAttentionEndToEndTest, TheBiasKernelFlagsTheTilesThatKeepAScore) {
  const fs::path binary = fs::path(KFORGE_SOURCE_DIR) / "build" / "kforge";
  if (!fs::exists(binary)) GTEST_SKIP() << "no kforge binary at " << binary;
  if (!fs::exists(kPython)) GTEST_SKIP() << "no python at " << kPython;
  const std::vector<std::pair<std::string, std::string>> cases = {{"codegen/attention_mingpt_causal", "\n  1 0\n  1 1\n"},
                                                                  {"codegen/attention_relpos_clamp", ": ok\n"}};
  for (const auto& [name, flags] : cases) {
    Result<fs::path> dir = MakeTempDir(fs::temp_directory_path(), "kforge_bias_tiles");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    Result<passes::PipelineResult> planned = CaptureAndPlan(binary, TaskPath(name), *dir);
    ASSERT_TRUE(planned.ok()) << planned.status().ToString();
    ModelWriterOptions options;
    options.kernel.cuda_ieee_kernels = true;
    Result<std::string> model = WriteModelNew(planned->graph, planned->plan, options);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    ASSERT_TRUE(WriteFile(*dir / "model_new.py", *model).ok());
    const auto [rc, output] = RunScript(*dir, "attention_bias_tiles.py", name, "", "tiles.log");
    EXPECT_EQ(rc, 0) << name << "\n" << output << "\n--- model_new.py ---\n" << *model;
    EXPECT_NE(output.find(flags), std::string::npos) << name << "\n" << output;
    if (rc == 0) RemoveTreeQuietly(*dir);
  }
}

// The precision ladder's steps with attention's inputs in IEEE: minGPT's qkv projection, split by
// the attention_products pass into the product of q's and k's columns (44 x 96 here) and v's
// (columns 96-143), has the first a CUDA FMA kernel; v's product, with the output projection,
// stays a Triton kernel of six-pass BF16 dots until v's precision is raised too.
TEST(CudaAttentionEndToEndTest, TheProductsAttentionReadsFromTakeTheirOwnPrecision) {
  ModelWriterOptions options;
  options.kernel.cuda_ieee_kernels = true;
  options.kernel.dot_precision = "bf16x6";
  options.kernel.attention_dot_precision = "ieee";
  options.kernel.attention_input_dot_precision = "ieee";
  ExpectCompilesForHopper("codegen/attention_mingpt_causal", options,
                          {"= KfCudaKernel(\"attention_", "= KfCudaKernel(\"matmul_addmm_0_96_", "def matmul_addmm_96_144_",
                           "input_precision=\"bf16x6\""});
  options.kernel.attention_value_dot_precision = "ieee";
  ExpectCompilesForHopper("codegen/attention_mingpt_causal", options,
                          {"= KfCudaKernel(\"matmul_addmm_0_96_", "= KfCudaKernel(\"matmul_addmm_96_144_", "input_precision=\"bf16x6\""});
}

// Mamba2's causal mask and integer logic are pointwise kernels: no bitwise or logical op, and no
// `where`, is left to ATen (the boolean `ones` the mask starts from is a fill).
TEST(MaskLogicEndToEndTest, IsPointwiseKernelsAndMatchesPyTorch) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  expected.absent_fragments = {"aten.bitwise", "aten.logical", "aten.where"};
  ExpectMatchesPyTorch("codegen/mask_logic", ModelWriterOptions{}, {"== 0", " ^ ", " & ", " | "}, kTolerance, expected);
}

// Instance norm is batch norm without running statistics over x viewed [1, N * C, ...]: the
// statistics of each channel's row, as a layer norm's, with the affine weight repeated per image
// (a copy).
TEST(InstanceNormEndToEndTest, IsRowStatisticsKernelsAndMatchesPyTorch) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  expected.absent_ops = {"aten._native_batch_norm_legit.no_stats"};
  ExpectMatchesPyTorch("codegen/instance_norm", ModelWriterOptions{}, {}, kTolerance, expected);
}

// Recurrent layers of every cell become input-projection GEMMs and per-step scan kernels: no
// aten.lstm, aten.gru or aten.rnn_* is left (the concatenation of final states stays an ATen call,
// which moves data). A bidirectional layer's two directions run side by side in one launch per
// step, writing the layer's [T, B, 2 * H] output without a concatenation.
TEST(RecurrenceEndToEndTest, EveryCellIsAScanKernelAndMatchesPyTorch) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  expected.absent_ops = {"aten.lstm.input", "aten.gru.input", "aten.rnn_tanh.input", "aten.rnn_relu.input"};
  expected.absent_fragments = {"aten.lstm", "aten.gru", "aten.rnn_", "kforge.rnn_scan", "aten.cat.default([lstm_scan_0"};
  ExpectMatchesPyTorch("codegen/recurrent_layers", ModelWriterOptions{},
                       {"for kf_s in range(7):", "kf_t = kf_n + kf_lane * (6 - 2 * kf_n)", "[(1, 2, 2)](", "# LSTM (gates i, f, g, o)",
                        "# GRU (gates r, z, n)", "tl.maximum(kf_x0 + kf_hh0, 0.0)"},
                       kTolerance, expected);
}

// Stacked unidirectional layers are one scan whose lanes (layers) run side by side, layer k at
// time step s - k: a four-layer LSTM of 6 steps takes 9 launches, not 24; a stack of ten layers is
// two scans of 8 and 2 (kMaxStackedLayers). Final states come out of the scan whole, no
// concatenation, where one scan makes them.
TEST(RecurrenceEndToEndTest, StackedLayersRunSideBySideAndMatchPyTorch) {
  PlanExpectations expected;
  expected.copies_allowed = true;
  expected.absent_ops = {"aten.lstm.input", "aten.gru.input", "aten.rnn_tanh.input"};
  expected.absent_fragments = {"aten.lstm", "aten.gru", "aten.rnn_", "aten.cat.default([lstm", "aten.cat.default([gru"};
  ExpectMatchesPyTorch("codegen/recurrent_stacks", ModelWriterOptions{},
                       {"for kf_s in range(9):", "[(1, 2, 4)](", "for kf_s in range(8):", "for kf_s in range(12):", "[(1, 2, 8)](",
                        "for kf_s in range(6):", "kf_n = kf_s - kf_lane", "mask=kf_mask & (kf_lane == 3))",
                        "lstm_scan_0_ring[:, 1].copy_(h0)", "lstm_scan_2.copy_(c0)"},
                       kTolerance, expected);
}

// Without their kernels, the scans are ATen's own recurrent op over gx (the stacked layers as its
// layers, two directions as a bidirectional layer, the first projection a selection): the library
// call matches PyTorch too.
TEST(RecurrenceEndToEndTest, ScansAsLibraryCallsMatchPyTorch) {
  for (const char* task : {"codegen/recurrent_layers", "codegen/recurrent_stacks"}) {
    SCOPED_TRACE(task);
    PlanExpectations expected;
    expected.copies_allowed = true;
    expected.as_library = {passes::FusionGroup::Kind::kRecurrence};
    expected.absent_fragments = {"def scan_"};
    ExpectMatchesPyTorch(task, ModelWriterOptions{}, {"torch.ops.aten.lstm.input(", "torch.ops.aten.gru.input("}, kTolerance, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Tasks, EndToEndTest,
                         ::testing::Values(
                             // pointwise
                             "level1/01_relu", "level1/17_gelu", "level1/18_sigmoid", "level1/19_leaky_relu",
                             "level1/20_softplus", "level1/21_hardtanh",
                             // row-wise reductions with prologues and epilogues, scans
                             "level1/03_softmax", "level1/37_log_softmax", "level1/04_layer_norm", "level1/25_rms_norm",
                             "level1/26_l2_norm", "level1/38_frobenius_norm", "level1/05_sum_reduction",
                             "level1/29_mean_reduction", "level1/30_argmax", "level1/24_group_norm",
                             "level1/23_batch_norm_eval", "level1/32_kl_div_loss",
                             "level1/33_smooth_l1_loss", "level1/34_cosine_similarity_loss", "level1/35_cumsum",
                             "level1/36_masked_cumsum", "level1/31_cross_entropy_loss",
                             // matmuls and convolutions with epilogues, pooling
                             "codegen/min_dim", "codegen/pool3d",
                             "level1/02_matmul", "level1/06_batched_matmul", "level1/07_matrix_vector",
                             "level1/08_matmul_transposed_a", "level1/10_diag_matmul", "level1/12_conv2d", "level1/13_depthwise_conv2d",
                             "level1/14_conv1d", "level1/15_conv3d", "level1/16_conv_transpose2d", "level1/27_max_pool2d",
                             "level1/28_adaptive_avg_pool2d", "level2/01_linear_relu", "level2/04_gemm_sigmoid_sum",
                             "level2/06_gemm_groupnorm_swish", "level2/08_gemm_subtract_max_gelu",
                             "level2/10_conv2d_avgpool_tanh_channel_sum",
                             // training-mode batch norms, whose running statistics forward() updates
                             "level1/22_batch_norm", "level2/05_conv2d_batchnorm_scaling", "level3/03_resnet_basic_block",
                             "level3/05_mobilenet_v2_block", "codegen/mutated_state",
                             // kernel forms the tasks' CPU sizes do not reach
                             "codegen/split_loss", "codegen/split_norm", "codegen/var_mean_forms", "codegen/column_sum", "codegen/column_argmax", "codegen/column_index_long", "codegen/conv_taps", "codegen/conv_flat_taps",
                             "codegen/conv_transpose_taps", "codegen/masked_matmul", "codegen/scans", "codegen/python_numbers", "codegen/unit_reductions", "codegen/gathers", "codegen/linear_residual", "codegen/uniform_pools", "codegen/looped_argmax", "codegen/gather_rows",
                             "level2/07_conv_transpose2d_add_hardswish"),
                         TestName);

}  // namespace
}  // namespace kforge::codegen
