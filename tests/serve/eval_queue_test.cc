#include "serve/eval_queue.h"

#include <thread>

#include <gtest/gtest.h>

namespace kforge {
namespace {

std::vector<EvalJobSpec> Specs(int count) {
  std::vector<EvalJobSpec> specs(count);
  for (int i = 0; i < count; ++i) specs[i].candidate = "candidate " + std::to_string(i);
  return specs;
}

TEST(EvalQueueTest, ServesClientsRoundRobin) {
  EvalQueue queue({});
  ASSERT_TRUE(queue.Submit("a", Specs(3)).ok());
  ASSERT_TRUE(queue.Submit("b", Specs(2)).ok());
  std::vector<std::string> order;
  for (int i = 0; i < 5; ++i) order.push_back(queue.Next()->client);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "a", "b", "a"}));
}

TEST(EvalQueueTest, RefusesAWholeSubmissionOverTheClientsLimit) {
  EvalQueue queue({.max_pending_per_client = 3});
  ASSERT_TRUE(queue.Submit("a", Specs(2)).ok());
  auto refused = queue.Submit("a", Specs(2));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(queue.Stats().queued, 2);
  EXPECT_TRUE(queue.Submit("b", Specs(3)).ok());  // another client's share is its own
  // A finished job frees its place.
  auto job = queue.Next();
  queue.Finish(job->id, {{"verdict", "accepted"}});
  EXPECT_TRUE(queue.Submit(job->client, Specs(1)).ok());
}

TEST(EvalQueueTest, ReportsStatesAndResults) {
  FakeClock clock;
  EvalQueue queue({}, clock);
  auto ids = queue.Submit("a", Specs(2));
  ASSERT_TRUE(ids.ok());
  clock.Advance(2);
  auto job = queue.Next();
  EXPECT_EQ(job->id, (*ids)[0]);
  EXPECT_EQ(job->spec.candidate, "candidate 0");
  EXPECT_EQ(queue.Get((*ids)[0])->state, EvalJobState::kRunning);
  EXPECT_EQ(queue.Get((*ids)[1])->state, EvalJobState::kQueued);
  clock.Advance(3);
  queue.Finish(job->id, {{"verdict", "accepted"}, {"evaluation_id", 7}});
  auto view = queue.Get(job->id);
  EXPECT_EQ(view->state, EvalJobState::kDone);
  EXPECT_DOUBLE_EQ(view->queued_s, 2);
  EXPECT_DOUBLE_EQ(view->run_s, 3);
  EXPECT_EQ(view->result["verdict"], "accepted");
  EXPECT_FALSE(queue.Get(999).has_value());
  QueueStats stats = queue.Stats();
  EXPECT_EQ(stats.done, 1);
  EXPECT_EQ(stats.clients["a"].queued, 1);
  EXPECT_EQ(stats.ToJson()["latency_s"]["p50"], 5.0);
}

TEST(EvalQueueTest, OldResultsShrinkToTheirStoredId) {
  EvalQueue queue({.max_kept_results = 1});
  auto ids = queue.Submit("a", Specs(2));
  for (int i = 0; i < 2; ++i) {
    auto job = queue.Next();
    queue.Finish(job->id, {{"verdict", "accepted"}, {"evaluation_id", 10 + i}});
  }
  auto old = queue.Get((*ids)[0]);
  EXPECT_EQ(old->state, EvalJobState::kExpired);
  EXPECT_EQ(old->result, (Json{{"evaluation_id", 10}}));
  EXPECT_EQ(queue.Get((*ids)[1])->result["verdict"], "accepted");
}

TEST(EvalQueueTest, WaitDoneReturnsWhenAWorkerFinishes) {
  EvalQueue queue({});
  auto ids = queue.Submit("a", Specs(1));
  std::thread worker([&] {
    auto job = queue.Next();
    queue.Finish(job->id, {{"verdict", "timeout"}});
  });
  auto views = queue.WaitDone(*ids, 30);
  worker.join();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].state, EvalJobState::kDone);
}

TEST(EvalQueueTest, CloseReleasesWorkersAndDropsWaitingJobs) {
  EvalQueue queue({});
  auto ids = queue.Submit("a", Specs(2));
  std::thread worker([&] {
    while (auto job = queue.Next()) queue.Finish(job->id, {});
  });
  queue.WaitDone({(*ids)[0]}, 30);
  queue.Close();
  worker.join();
  EXPECT_EQ(queue.Submit("a", Specs(1)).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kforge
