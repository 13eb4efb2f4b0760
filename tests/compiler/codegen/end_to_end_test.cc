// Numeric end-to-end check: capture a task with the kforge binary, plan and write ModelNew, then
// run it under the Triton interpreter against the task's Model (state dict loaded strictly).
// Skipped when the kforge binary or the Python venv is missing.
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "compiler/codegen/model_writer.h"
#include "compiler/ir/import_graph.h"
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


task = load("task", sys.argv[1])
for key, value in getattr(task, "KFORGE_CPU_SIZES", {}).items():
    setattr(task, key, value)
generated = load("generated", sys.argv[2])
torch.manual_seed(0)
model = task.Model(*task.get_init_inputs())
model_new = generated.ModelNew(*task.get_init_inputs())
model_new.load_state_dict(model.state_dict(), strict=True)
for scale in (1.0, 10.0):
    inputs = [x * scale if torch.is_tensor(x) and x.is_floating_point() else x for x in task.get_inputs()]
    with torch.no_grad():
        want, got = model(*inputs), model_new(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(want) == len(got), (len(want), len(got))
    for w, g in zip(want, got):
        if not torch.allclose(g, w, rtol=1e-5, atol=1e-5):
            print("MISMATCH scale", scale, "max abs diff", (g - w).abs().max().item())
            sys.exit(1)
print("OK")
)PY";

class EndToEndTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EndToEndTest, MatchesPyTorchUnderTheInterpreter) {
  const fs::path source_dir = KFORGE_SOURCE_DIR;
  const fs::path binary = source_dir / "build" / "kforge";
  if (!fs::exists(binary)) GTEST_SKIP() << "no kforge binary at " << binary;
  if (!fs::exists(kPython)) GTEST_SKIP() << "no python at " << kPython;
  const fs::path task = source_dir / "tasks" / (std::string(GetParam()) + ".py");
  ASSERT_TRUE(fs::exists(task)) << task;

  Result<fs::path> dir = MakeTempDir(fs::temp_directory_path(), "kforge_codegen_e2e");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  const fs::path json = *dir / "graph.json";
  std::string capture = "'" + binary.string() + "' -q --device cpu --workspace '" + (*dir / "ws").string() +
                        "' ir --json '" + task.string() + "' > '" + json.string() + "'";
  ASSERT_EQ(std::system(capture.c_str()), 0) << capture;

  Result<ir::Graph> graph = ir::ImportGraphText(ReadFile(json).value(), json.string());
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  passes::FusionPlan plan = passes::PlanFusion(*graph);
  Result<std::string> model = WriteModelNew(*graph, plan);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(WriteFile(*dir / "model_new.py", *model).ok());
  ASSERT_TRUE(WriteFile(*dir / "driver.py", kDriver).ok());

  const fs::path log = *dir / "driver.log";
  std::string run = "cd '" + dir->string() + "' && TRITON_INTERPRET=1 " + kPython + " driver.py '" + task.string() +
                    "' model_new.py > driver.log 2>&1";
  int rc = std::system(run.c_str());
  Result<std::string> logged = ReadFile(log);
  std::string output = logged.ok() ? *logged : "";
  EXPECT_EQ(rc, 0) << output << "\n--- model_new.py ---\n" << *model;
  EXPECT_NE(output.find("OK"), std::string::npos) << output;
  if (rc == 0) RemoveTreeQuietly(*dir);
}

INSTANTIATE_TEST_SUITE_P(Tasks, EndToEndTest,
                         ::testing::Values("level1/01_relu", "level1/17_gelu", "level1/18_sigmoid",
                                           "level1/19_leaky_relu", "level1/20_softplus", "level1/21_hardtanh",
                                           "level2/01_linear_relu"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace kforge::codegen
