// The prompts kforge ships (prompts/ in the source tree) fill without errors for every kind of
// round, say what the evaluator checks, and carry our example kernels.
#include <gtest/gtest.h>

#include "agents/code_extraction.h"
#include "agents/writer_prompts.h"
#include "fakes.h"

namespace kforge {
namespace {

class ShippedPromptsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto library = PromptLibrary::Load(std::filesystem::path(KFORGE_SOURCE_DIR) / "prompts");
    ASSERT_TRUE(library.ok()) << library.status().ToString();
    library_.emplace(std::move(library).value());
    brief_.task.name = "level1/01_relu";
    brief_.task.source = "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n";
    brief_.device = "cuda:0";
    brief_.target = TargetDescription("cuda:0", "NVIDIA H200");
  }

  std::string Round(const RoundContext& context, int variant = 0) {
    auto text = RoundPrompt(*library_, brief_, context, variant);
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    std::string out = text.ok() ? *text : "";
    EXPECT_EQ(out.find("{{"), std::string::npos) << out;
    return out;
  }

  std::optional<PromptLibrary> library_;
  WriterBrief brief_;
};

TEST_F(ShippedPromptsTest, SystemPromptStatesTheRulesAndTheTarget) {
  auto system = SystemPrompt(*library_, brief_);
  ASSERT_TRUE(system.ok()) << system.status().ToString();
  EXPECT_EQ(system->find("{{"), std::string::npos);
  for (const char* needle : {"the NVIDIA H200 GPU (cuda:0)", "several seeds", "fp32", "Strict mode", "memoisation",
                             "side streams", "timer", "reading files", "hard-code", "downgraded"}) {
    EXPECT_NE(system->find(needle), std::string::npos) << needle;
  }
  EXPECT_EQ(system->find("Triton's interpreter on the CPU"), std::string::npos);
  EXPECT_EQ(system->find("Partial mode"), std::string::npos);

  brief_.device = "cpu";
  brief_.mode = "partial";
  auto cpu = SystemPrompt(*library_, brief_);
  ASSERT_TRUE(cpu.ok());
  EXPECT_NE(cpu->find("Triton's interpreter on the CPU"), std::string::npos);
  EXPECT_NE(cpu->find("Partial mode"), std::string::npos);
  EXPECT_EQ(cpu->find("Strict mode"), std::string::npos);
}

TEST_F(ShippedPromptsTest, KnowledgeExamplesAreCompleteProgramsInTheSystemPrompt) {
  std::vector<std::string> names = library_->NamesUnder("knowledge/");
  ASSERT_GE(names.size(), 3u);
  auto system = SystemPrompt(*library_, brief_);
  ASSERT_TRUE(system.ok());
  for (const std::string& name : names) {
    std::string text = *library_->Raw(name);
    EXPECT_NE(system->find(text.substr(0, 60)), std::string::npos) << name;
    EXPECT_NE(text.find("@triton.jit"), std::string::npos) << name;
  }
  EXPECT_TRUE(ExtractCandidate(*library_->Raw("knowledge/2_row_softmax")).ok());
  EXPECT_TRUE(ExtractCandidate(*library_->Raw("knowledge/3_matmul_epilogue")).ok());
}

TEST_F(ShippedPromptsTest, WritePromptHasOptionalSections) {
  RoundContext context;
  std::string plain = Round(context);
  EXPECT_NE(plain.find("return torch.relu(x)"), std::string::npos);
  EXPECT_EQ(plain.find("A starting point"), std::string::npos);
  EXPECT_NE(plain.find("one ```python block"), std::string::npos);

  brief_.ir_summary = "group 0: relu (pointwise)";
  brief_.starting_candidate = "class ModelNew(nn.Module):\n    pass\n";
  std::string full = Round(context);
  EXPECT_NE(full.find("group 0: relu (pointwise)"), std::string::npos);
  EXPECT_NE(full.find("A starting point"), std::string::npos);
}

TEST_F(ShippedPromptsTest, RepairPromptCarriesTheCandidateAndFeedback) {
  RoundContext context;
  context.kind = PromptKind::kRepair;
  context.round = 2;
  context.previous_candidate = "class ModelNew: broken = True\n";
  context.previous_feedback = "Verdict: compile_error\nno attribute 'relu'";
  std::string text = Round(context);
  EXPECT_NE(text.find("round 2"), std::string::npos);
  EXPECT_NE(text.find("broken = True"), std::string::npos);
  EXPECT_NE(text.find("no attribute 'relu'"), std::string::npos);
  EXPECT_EQ(text.find("Your last reply"), std::string::npos);

  context = RoundContext{};
  context.kind = PromptKind::kRepair;
  context.reply_problem = "Your reply was empty.";
  text = Round(context);
  EXPECT_NE(text.find("Your reply was empty."), std::string::npos);
  EXPECT_EQ(text.find("Your previous candidate"), std::string::npos);
}

TEST_F(ShippedPromptsTest, SpeedupPromptShowsTheBestAndItsMeasurements) {
  AcceptedCandidate best{"/run/writer1/round2/candidate.py", "class ModelNew: fast = 1\n",
                         MakeEvaluation(VerdictKind::kAccepted, "correct on 8 input sets", 1.25), 1, 2};
  RoundContext context;
  context.kind = PromptKind::kSpeedup;
  context.round = 3;
  context.best = &best;
  std::string text = Round(context);
  EXPECT_NE(text.find("fast = 1"), std::string::npos);
  EXPECT_NE(text.find("writer 1, round 2"), std::string::npos);
  EXPECT_NE(text.find("1.25x"), std::string::npos) << text;
}

TEST_F(ShippedPromptsTest, RecombinePromptShowsBothVersionsAndTheirMeasurements) {
  AcceptedCandidate best{"/run/writer1/round2/candidate.py", "class ModelNew: version = 'a'\n",
                         MakeEvaluation(VerdictKind::kAccepted, "correct on 8 input sets", 1.25), 1, 2};
  AcceptedCandidate mate{"/run/writer2/round1/candidate.py", "class ModelNew: version = 'b'\n",
                         MakeEvaluation(VerdictKind::kAccepted, "correct on 8 input sets", 1.75), 2, 1};
  RoundContext context;
  context.kind = PromptKind::kRecombine;
  context.round = 3;
  context.best = &best;
  context.mate = &mate;
  std::string text = Round(context);
  for (const char* needle : {"version = 'a'", "version = 'b'", "writer 1, round 2", "writer 2, round 1", "1.25x",
                             "1.75x", "faster than both"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
  context.mate = nullptr;
  EXPECT_FALSE(RoundPrompt(*library_, brief_, context, 0).ok()) << "a recombine round needs two candidates";
}

TEST_F(ShippedPromptsTest, VariantsPickDifferentApproaches) {
  RoundContext context;
  std::vector<std::string> prompts;
  for (int variant = 0; variant < 4; ++variant) prompts.push_back(Round(context, variant));
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) EXPECT_NE(prompts[i], prompts[j]) << i << " " << j;
  }
  EXPECT_EQ(Round(context, 4), prompts[0]);
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

TEST(TargetMachineTest, TheFullHardwareAndSoftwareFromTheFingerprint) {
  Json fingerprint = Json::parse(R"({"gpu": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132,
      "memory_bytes": 150109880320, "l2_bytes": 62914560, "shared_memory_per_block_optin": 232448,
      "shared_memory_per_sm": 233472, "registers_per_sm": 65536, "cuda": "13.0", "torch": "2.11.0+cu130",
      "triton": "3.6.0", "python": "3.12.3"})");
  EXPECT_EQ(TargetDescription(TargetMachine::FromFingerprint("cuda:0", fingerprint)),
            "the NVIDIA H200 GPU (cuda:0): compute capability 9.0, 132 SMs, 139.8 GiB of memory, 60 MiB of L2 cache, "
            "up to 227 KiB of shared memory per block (228 KiB per SM), 65536 registers per SM; CUDA 13.0, "
            "torch 2.11.0+cu130, Triton 3.6.0, Python 3.12.3");
  Json cpu = Json::parse(R"({"gpu": null, "torch": "2.11.0", "triton": "3.6.0", "python": "3.11.2"})");
  EXPECT_EQ(TargetDescription(TargetMachine::FromFingerprint("cpu", cpu)),
            "the CPU, through Triton's interpreter (TRITON_INTERPRET=1), with torch 2.11.0, Triton 3.6.0, Python 3.11.2");
}

}  // namespace
}  // namespace kforge
