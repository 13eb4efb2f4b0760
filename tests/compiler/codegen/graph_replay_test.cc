// The rule that decides when a generated forward replays as a CUDA graph.
#include "compiler/codegen/graph_replay.h"

#include <gtest/gtest.h>

namespace kforge::codegen {
namespace {

TEST(GraphReplayTest, SettingsParseAndPrint) {
  for (GraphReplay mode : {GraphReplay::kAuto, GraphReplay::kAlways, GraphReplay::kNever}) {
    GraphReplay parsed = GraphReplay::kNever;
    ASSERT_TRUE(ParseGraphReplay(ToString(mode), parsed));
    EXPECT_EQ(parsed, mode);
  }
  GraphReplay parsed = GraphReplay::kAuto;
  EXPECT_FALSE(ParseGraphReplay("sometimes", parsed));
}

TEST(GraphReplayTest, ForcedSettingsIgnoreTheShape) {
  EXPECT_TRUE(ReplaysAsGraph(GraphReplay::kAlways, {.launches = 1, .copy_bytes = int64_t{1} << 40}));
  EXPECT_FALSE(ReplaysAsGraph(GraphReplay::kNever, {.launches = 500, .copy_bytes = 0}));
}

// A few launches hide behind the GPU's work: no graph; a network's hundred launches replay.
TEST(GraphReplayTest, AutoReplaysForwardsOfManyLaunchesWithSmallCopies) {
  EXPECT_FALSE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 3, .copy_bytes = 1 << 20}));
  EXPECT_TRUE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 7, .copy_bytes = 10 * 1 * 32 * 32 * 4}));  // LeNet-5
  EXPECT_TRUE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 159, .copy_bytes = 2 * 3 * 224 * 224 * 4}));  // ResNet18
}

// Copying gigabytes of inputs into the graph's buffers costs more than the launches it saves.
TEST(GraphReplayTest, AutoDoesNotCopyHugeInputs) {
  EXPECT_FALSE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 20, .copy_bytes = int64_t{6} << 30}));
  // ShuffleNet's unit: 38 launches behind 6 ms of kernels, 481 MB in and out; replayed, 0.90x.
  EXPECT_FALSE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 38, .copy_bytes = int64_t{962} * 1000 * 1000}));
}

}  // namespace
}  // namespace kforge::codegen
