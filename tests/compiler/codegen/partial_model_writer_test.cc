// The partial ModelNew: golden source for two captured submodules plus one that computes what
// another does (they share a class), and the inputs the writer refuses.
#include "compiler/codegen/partial_model_writer.h"

#include <gtest/gtest.h>

#include "compiler/ir/import_graph.h"
#include "compiler/passes/pipeline.h"
#include "core/files.h"
#include "golden_files.h"
#include "golden_source.h"

namespace kforge::codegen {
namespace {

passes::PipelineResult Compile(const std::string& name) {
  std::filesystem::path path = ir::testing::GoldenDir() / (name + ".json");
  ir::Graph graph = std::move(ir::ImportGraphText(ReadFile(path).value(), path.string())).value();
  return std::move(passes::RunPipeline(std::move(graph), {})).value();
}

const char* kForwardSource = R"(import torch
import torch.nn as nn

class kf_task_Block(nn.Module):

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(64, 32)

    def forward(self, x):
        return torch.relu(self.linear(x))

class kf_task_Model(nn.Module):

    def __init__(self):
        super(kf_task_Model, self).__init__()
        self.act = nn.ReLU()
        self.blocks = nn.ModuleList([kf_task_Block() for _ in range(2)])

    def forward(self, x, y):
        if x.sum() > 0:
            x = self.act(x)
        return (x, self.blocks[0](y) + self.blocks[1](y))
)";
PartialModel ModelOf(const passes::PipelineResult& relu, const passes::PipelineResult& linear_relu) {
  return PartialModel{"branchy",
                      kForwardSource,
                      "kf_task_Model",
                      {{"act", &relu.graph, &relu.plan},
                       {"blocks.0", &linear_relu.graph, &linear_relu.plan},
                       {"blocks.1", &linear_relu.graph, &linear_relu.plan}}};
}

TEST(PartialModelWriterTest, GoldenSource) {
  passes::PipelineResult relu = Compile("relu");
  passes::PipelineResult linear_relu = Compile("linear_relu");
  testing::ExpectGoldenSource(WritePartialModelNew(ModelOf(relu, linear_relu), {}), "partial_relu_blocks");
}

TEST(PartialModelWriterTest, RefusesNothingToCompileAndABadClassName) {
  passes::PipelineResult relu = Compile("relu");
  passes::PipelineResult linear_relu = Compile("linear_relu");
  PartialModel model = ModelOf(relu, linear_relu);
  model.forward_class = "kf task";
  EXPECT_FALSE(WritePartialModelNew(model, {}).ok());
  model = ModelOf(relu, linear_relu);
  model.submodules.clear();
  EXPECT_FALSE(WritePartialModelNew(model, {}).ok());
}

}  // namespace
}  // namespace kforge::codegen
