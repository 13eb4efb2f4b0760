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
  EXPECT_FALSE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 3, .copy_bytes = 1 << 20}));  // measured instead
  EXPECT_TRUE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 7, .copy_bytes = 10 * 1 * 32 * 32 * 4}));  // LeNet-5
  EXPECT_TRUE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 159, .copy_bytes = 2 * 3 * 224 * 224 * 4}));  // ResNet18
}

// Copying gigabytes of inputs into the graph's buffers costs more than the launches it saves.
TEST(GraphReplayTest, AutoDoesNotCopyHugeInputs) {
  EXPECT_FALSE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 20, .copy_bytes = int64_t{6} << 30}));
  // ShuffleNet's unit: 38 launches behind 6 ms of kernels, 481 MB in and out; replayed, 0.90x.
  EXPECT_FALSE(ReplaysAsGraph(GraphReplay::kAuto, {.launches = 38, .copy_bytes = int64_t{962} * 1000 * 1000}));
}

// Between one launch and kMinLaunches, with cheap copies, whether the host bounds the call is
// measured: relpos attention at T = 256 (four launches, 8 MB in and out).
TEST(GraphReplayTest, AFewLaunchesWithCheapCopiesAreMeasured) {
  EXPECT_EQ(ChooseReplay(GraphReplay::kAuto, {.launches = 4, .copy_bytes = 2 * 8 * 256 * 512 * 4}), ReplayChoice::kMeasure);
  EXPECT_EQ(ChooseReplay(GraphReplay::kAuto, {.launches = 2, .copy_bytes = 1 << 20}), ReplayChoice::kMeasure);
  EXPECT_EQ(ChooseReplay(GraphReplay::kAuto, {.launches = 1, .copy_bytes = 1 << 20}), ReplayChoice::kDirect);
  EXPECT_EQ(ChooseReplay(GraphReplay::kAuto, {.launches = 7, .copy_bytes = 1 << 20}), ReplayChoice::kReplay);
  // Copies of a gigabyte cost more than three launches ever save: not worth measuring.
  EXPECT_EQ(ChooseReplay(GraphReplay::kAuto, {.launches = 3, .copy_bytes = int64_t{1} << 30}), ReplayChoice::kDirect);
  EXPECT_EQ(ChooseReplay(GraphReplay::kNever, {.launches = 4, .copy_bytes = 0}), ReplayChoice::kDirect);
  EXPECT_EQ(ChooseReplay(GraphReplay::kAlways, {.launches = 4, .copy_bytes = 0}), ReplayChoice::kReplay);
}

}  // namespace
}  // namespace kforge::codegen
