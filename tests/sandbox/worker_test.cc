#include "sandbox/worker.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "fake_worker.h"

namespace kforge {
namespace {

using WorkerTest = FakeWorkerTest;

TEST_F(WorkerTest, StartKeepsTheHelloReply) {
  auto worker = StartWorker(Spec("zygote"));
  ASSERT_NE(worker, nullptr);
  EXPECT_TRUE(worker->alive());
  EXPECT_EQ(worker->hello()["role"], "zygote");
  EXPECT_EQ(worker->hello()["device"], "cpu");
  EXPECT_GT(JsonGet<int>(worker->hello(), "pid", 0), 0);
}

TEST_F(WorkerTest, WorkerSeesOnlyItsSpecEnvironmentPlusPythonPath) {
  ASSERT_EQ(setenv("KFORGE_TEST_PARENT_ONLY", "leaked", 1), 0);
  auto worker = StartWorker(Spec("trusted", {"KFORGE_TEST_GIVEN=yes"}));
  unsetenv("KFORGE_TEST_PARENT_ONLY");
  ASSERT_NE(worker, nullptr);
  auto seen = worker->Call("environ", Json::object(), 5);
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  EXPECT_EQ((*seen)["PYTHONPATH"], dir_.string());
  EXPECT_EQ((*seen)["PYTHONUNBUFFERED"], "1");
  EXPECT_EQ((*seen)["KFORGE_TEST_GIVEN"], "yes");
  EXPECT_FALSE(seen->contains("KFORGE_TEST_PARENT_ONLY"));
}

TEST_F(WorkerTest, EchoRoundTripsFieldsWithIdAndOp) {
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  Json fields = {{"text", "gr\xC3\xBC\xC3\x9F" "e"}, {"numbers", {1, 2.5}}, {"nested", {{"a", nullptr}}}};
  auto reply = worker->Call("echo", fields, 5);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ((*reply)["op"], "echo");
  EXPECT_TRUE((*reply)["id"].is_number_integer());
  for (const auto& [key, value] : fields.items()) EXPECT_EQ((*reply)[key], value) << key;

  auto second = worker->Call("echo", Json::object(), 5);
  ASSERT_TRUE(second.ok());
  EXPECT_GT((*second)["id"].get<int>(), (*reply)["id"].get<int>());  // ids are fresh per request
}

TEST_F(WorkerTest, CallerCannotOverrideIdOrOp) {
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  auto reply = worker->Call("echo", Json{{"id", 999}, {"op", "crash"}}, 5);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ((*reply)["op"], "echo");
  EXPECT_NE((*reply)["id"], 999);
}

TEST_F(WorkerTest, UserErrorIsInvalidArgumentWithTheWorkersMessage) {
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  auto reply = worker->Call("user_error", Json{{"message", "get_inputs() is missing"}}, 5);
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reply.status().message(), "get_inputs() is missing");
  EXPECT_TRUE(worker->alive());
  EXPECT_TRUE(worker->Call("echo", Json::object(), 5).ok());
}

TEST_F(WorkerTest, InternalErrorIsInternalWithOpAndTraceback) {
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  auto reply = worker->Call("internal_error", Json::object(), 5);
  EXPECT_EQ(reply.status().code(), StatusCode::kInternal);
  EXPECT_NE(reply.status().message().find("internal_error failed in the worker"), std::string::npos);
  EXPECT_NE(reply.status().message().find("ZeroDivisionError"), std::string::npos);
  EXPECT_NE(reply.status().message().find("Traceback"), std::string::npos);
  EXPECT_TRUE(worker->alive());
}

// The message should also carry the worker's last output; it does not always (see the disabled
// regression test below), so here the output is only checked to have been captured eventually.
TEST_F(WorkerTest, CrashIsUnavailableWithExitStatus) {
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  auto reply = worker->Call("crash", Json::object(), 5);
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("exited with code 3"), std::string::npos) << reply.status().message();
  EXPECT_TRUE(WaitUntil([&] { return worker->OutputTail().find("the disk is on fire") != std::string::npos; }, 2));
  EXPECT_FALSE(worker->alive());
  EXPECT_EQ(worker->Call("echo", Json::object(), 5).status().code(), StatusCode::kUnavailable);
}

// Regression: Worker::Fail reads the output tail as soon as it has reaped the worker, but the
// capture thread may not have drained the output pipe yet, so the message often lacks the worker's
// last words. The race is lost when the capture thread is not scheduled in time: about one crash
// in five on a busy machine. Busy threads here make that likely (not certain) within 20 crashes.
TEST_F(WorkerTest, CrashMessageAlwaysHasTheWorkersLastOutput) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (unsigned i = 0; i < 2 * std::max(1u, std::thread::hardware_concurrency()); ++i) {
    busy.emplace_back([&] {
      while (!stop) {
      }
    });
  }
  int missing = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto worker = StartWorker(Spec());
    if (worker == nullptr) break;
    auto reply = worker->Call("crash", Json::object(), 5);
    if (reply.status().message().find("the disk is on fire") == std::string::npos) ++missing;
  }
  stop = true;
  for (auto& thread : busy) thread.join();
  EXPECT_EQ(missing, 0) << "crashes whose message lacked the worker's last output, out of 20";
}

TEST_F(WorkerTest, TimeoutKillsTheWorker) {
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  auto start = std::chrono::steady_clock::now();
  auto reply = worker->Call("sleep", Json{{"seconds", 30}}, 0.3);
  EXPECT_LT(SecondsSince(start), 2);
  EXPECT_EQ(reply.status().code(), StatusCode::kTimeout);
  EXPECT_NE(reply.status().message().find("killed by signal 9"), std::string::npos) << reply.status().message();
  EXPECT_FALSE(worker->alive());
  EXPECT_EQ(worker->Call("echo", Json::object(), 5).status().code(), StatusCode::kUnavailable);
}

TEST_F(WorkerTest, SlowAnswerWithinTheTimeoutIsFine) {
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  auto reply = worker->Call("sleep", Json{{"seconds", 0.1}}, 5);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ((*reply)["slept"], 0.1);
}

TEST_F(WorkerTest, MalformedReplyKillsTheWorker) {
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->Call("garbage", Json::object(), 5).status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(worker->alive());
}

TEST_F(WorkerTest, ReplyToAnotherRequestKillsTheWorker) {
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  auto reply = worker->Call("wrong_id", Json::object(), 5);
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("out of order"), std::string::npos) << reply.status().message();
  EXPECT_FALSE(worker->alive());
}

TEST_F(WorkerTest, WorkerThatNeverSaysHelloFailsToStartInTime) {
  WorkerSpec spec = Spec("trusted", {"FAKE_WORKER_MODE=silent"});
  spec.start_timeout_s = 0.5;
  auto start = std::chrono::steady_clock::now();
  auto worker = Worker::Start(spec);
  double took = SecondsSince(start);
  EXPECT_EQ(worker.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(worker.status().message().find("did not start"), std::string::npos) << worker.status().message();
  EXPECT_GE(took, 0.45);
  EXPECT_LT(took, 2);
}

// SIGPIPE is ignored in the next two tests because "hello" may be written after the child has
// already died, and kforge does not protect itself from SIGPIPE (see the disabled tests).
TEST_F(WorkerTest, MissingInterpreterFailsToStart) {
  ScopedIgnoreSigpipe ignore_sigpipe;
  WorkerSpec spec = Spec();
  spec.python = (dir_ / "no" / "python3").string();
  auto worker = Worker::Start(spec);
  EXPECT_EQ(worker.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(worker.status().message().find("exited with code 127"), std::string::npos) << worker.status().message();
}

TEST_F(WorkerTest, MissingPackageFailsToStartWithPythonsError) {
  ScopedIgnoreSigpipe ignore_sigpipe;
  WorkerSpec spec = Spec();
  spec.python_path = (dir_ / "empty").string();
  auto worker = Worker::Start(spec);
  EXPECT_EQ(worker.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(worker.status().message().find("No module named kforge_worker"), std::string::npos)
      << worker.status().message();
}

// Regression: a worker that dies between requests (OOM killer, a stray signal) is still
// alive() and the next Call() writes to a pipe nobody reads. With SIGPIPE at its default (kforge
// never changes it) that kills kforge; here SIGPIPE is ignored so the test itself survives, and the
// death test below shows the default case.
TEST_F(WorkerTest, CallAfterTheWorkerDiedBetweenRequestsIsUnavailableWhenSigpipeIsIgnored) {
  ScopedIgnoreSigpipe ignore_sigpipe;
  auto worker = StartWorker(Spec());
  ASSERT_NE(worker, nullptr);
  ASSERT_TRUE(worker->Call("exit_after_reply", Json::object(), 5).ok());
  EXPECT_EQ(worker->Call("echo", Json::object(), 5).status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(worker->alive());
}

TEST_F(WorkerTest, CallAfterTheWorkerDiedBetweenRequestsDoesNotKillKforge) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  WorkerSpec spec = Spec();
  EXPECT_EXIT(
      {
        signal(SIGPIPE, SIG_DFL);
        auto worker = Worker::Start(spec);
        RemoveTreeQuietly(dir_);  // the death-test child never reaches TearDown
        if (!worker.ok() || !(*worker)->Call("exit_after_reply", Json::object(), 5).ok()) _exit(2);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it exit and close fd 3
        auto reply = (*worker)->Call("echo", Json::object(), 5);
        _exit(reply.status().code() == StatusCode::kUnavailable ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace kforge
