#include "report/bench_progress.h"

#include <gtest/gtest.h>

#include "core/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

TEST(BenchProgressTest, EstimatesTheTimeLeftFromTheTasksThatRan) {
  auto dir = MakeTempDir(fs::temp_directory_path(), "kforge-progress-test-");
  ASSERT_TRUE(dir.ok());
  FakeClock clock;
  BenchProgressWriter writer(*dir / "progress.json", 4, clock);
  writer.Finished("level1/a", "accepted", 1.5, /*reused=*/true);  // reused: no time spent, no estimate yet
  EXPECT_FALSE(writer.progress().eta_s.has_value());
  writer.Started("level1/b");
  clock.Advance(10);
  writer.Finished("level1/b", "wrong_output", std::nullopt, false);
  ASSERT_TRUE(writer.progress().eta_s.has_value());
  EXPECT_DOUBLE_EQ(*writer.progress().eta_s, 20);  // two tasks left at 10 s each
  writer.Started("level1/c");
  auto read = ReadBenchProgress(*dir);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->done, 2);
  EXPECT_EQ(read->reused, 1);
  EXPECT_EQ(read->accepted, 1);
  EXPECT_EQ(read->current, "level1/c");
  ASSERT_EQ(read->latest.size(), 2u);
  EXPECT_EQ(read->latest.front().task, "level1/b");  // newest first
  EXPECT_EQ(read->Line(), "[2/4] 1 accepted, 1 reused; now level1/c; about 20 s left");
  writer.Finished("level1/c", "accepted", 2.0, false);
  writer.Finished("level1/d", "accepted", 2.0, true);
  writer.AllDone();
  read = ReadBenchProgress(*dir);
  EXPECT_EQ(read->state, "finished");
  EXPECT_FALSE(read->eta_s.has_value());
  EXPECT_EQ(read->latest.front().task, "level1/d");
  RemoveTreeQuietly(*dir);
}

TEST(BenchProgressTest, SeveralTasksInProgressAtOnce) {
  FakeClock clock;
  BenchProgressWriter writer("", 6, clock);
  writer.SetWorkers(2);
  writer.Started("level1/a");
  clock.Advance(5);
  writer.Started("level1/b");
  EXPECT_EQ(writer.progress().current, "level1/a, level1/b");
  clock.Advance(5);
  writer.Finished("level1/b", "accepted", std::nullopt, false);  // 5 s, on its own clock
  EXPECT_EQ(writer.progress().current, "level1/a");
  ASSERT_TRUE(writer.progress().eta_s.has_value());
  EXPECT_DOUBLE_EQ(*writer.progress().eta_s, 5.0 * 5 / 2);  // five left at 5 s each, two at a time
  writer.Finished("level1/a", "accepted", std::nullopt, false);  // 10 s
  EXPECT_DOUBLE_EQ(*writer.progress().eta_s, 7.5 * 4 / 2);
  EXPECT_EQ(writer.progress().current, "");
  EXPECT_EQ(writer.progress().Line(), "[2/6] 2 accepted; about 15 s left");
}

TEST(BenchProgressTest, FormatsDurationsForPeople) {
  EXPECT_EQ(FormatDuration(35), "35 s");
  EXPECT_EQ(FormatDuration(240), "4 min");
  EXPECT_EQ(FormatDuration(5700), "1 h 35 min");
  EXPECT_EQ(FormatDuration(-1), "?");
}

}  // namespace
}  // namespace kforge
