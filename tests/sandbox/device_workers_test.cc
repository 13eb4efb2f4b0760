#include "sandbox/device_workers.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "fake_worker.h"

namespace kforge {
namespace {

class DeviceWorkersTest : public FakeWorkerTest {
 protected:
  SandboxSettings Sandbox() const {
    SandboxSettings sandbox;
    sandbox.root = (dir_ / "sandbox").string();
    sandbox.user = "nobody";
    sandbox.isolation = "spawn";
    sandbox.candidate_environment = {{"PATH", "/usr/bin"}, {"TRITON_INTERPRET", "1"}};
    sandbox.syscall_filter = "\x01\x02";
    return sandbox;
  }

  // The pid of the worker process behind `client`, asked over the protocol.
  static int PidOf(WorkerClient* client) {
    auto status = client->Call("status", Json::object(), 5);
    EXPECT_TRUE(status.ok()) << status.status().ToString();
    return status.ok() ? JsonGet<int>(*status, "pid", -1) : -1;
  }
};

TEST_F(DeviceWorkersTest, TrustedStartsOnceAndIsReused) {
  DeviceWorkers workers(Spec("ignored"), Sandbox());
  EXPECT_EQ(workers.device(), "cpu");
  auto first = workers.Trusted();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = workers.Trusted();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
  auto fingerprint = workers.Fingerprint();
  ASSERT_TRUE(fingerprint.ok()) << fingerprint.status().ToString();
  EXPECT_EQ((*fingerprint)["role"], "trusted");
  EXPECT_EQ((*fingerprint)["pid"], PidOf(*first));
}

TEST_F(DeviceWorkersTest, DeadTrustedWorkerIsRestartedOnNextUse) {
  DeviceWorkers workers(Spec(), Sandbox());
  auto first = workers.Trusted();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  int first_pid = PidOf(*first);
  EXPECT_EQ((*first)->Call("crash", Json::object(), 5).status().code(), StatusCode::kUnavailable);

  auto second = workers.Trusted();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  int second_pid = PidOf(*second);
  EXPECT_GT(second_pid, 0);
  EXPECT_NE(second_pid, first_pid);
  EXPECT_EQ((*workers.Fingerprint())["pid"], second_pid);
}

TEST_F(DeviceWorkersTest, TrustedStartFailureIsReported) {
  ScopedIgnoreSigpipe ignore_sigpipe;  // "hello" may meet a child that has already exited
  WorkerSpec spec = Spec();
  spec.python = (dir_ / "no" / "python3").string();
  DeviceWorkers workers(spec, Sandbox());
  EXPECT_EQ(workers.Trusted().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(workers.Fingerprint().status().code(), StatusCode::kUnavailable);
}

TEST_F(DeviceWorkersTest, ZygoteIsConfiguredWithTheSandboxSettings) {
  DeviceWorkers workers(Spec(), Sandbox());
  auto zygote = workers.Zygote();
  ASSERT_TRUE(zygote.ok()) << zygote.status().ToString();
  auto status = (*zygote)->Call("status", Json::object(), 5);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  Json expected = {{"root", (dir_ / "sandbox").string()},
                   {"env", {{"PATH", "/usr/bin"}, {"TRITON_INTERPRET", "1"}}},
                   {"user", "nobody"},
                   {"isolation", "spawn"},
                   {"seccomp_bpf_hex", "0102"},
                   {"allow_unisolated", false},
                   {"readable", Json::array()}};
  EXPECT_EQ((*status)["configured"], expected);
  EXPECT_EQ(workers.isolation()["namespaces"], true);
  EXPECT_EQ((*status)["configure_calls"], 1);

  auto again = workers.Zygote();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *zygote);
  EXPECT_EQ((*(*again)->Call("status", Json::object(), 5))["configure_calls"], 1);  // configured once
}

TEST_F(DeviceWorkersTest, ZygoteAndTrustedAreSeparateProcesses) {
  DeviceWorkers workers(Spec(), Sandbox());
  auto trusted = workers.Trusted();
  auto zygote = workers.Zygote();
  ASSERT_TRUE(trusted.ok() && zygote.ok());
  EXPECT_NE(PidOf(*trusted), PidOf(*zygote));
}

TEST_F(DeviceWorkersTest, DeadZygoteIsRestartedAndConfiguredAgain) {
  DeviceWorkers workers(Spec(), Sandbox());
  auto first = workers.Zygote();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  int first_pid = PidOf(*first);
  EXPECT_EQ((*first)->Call("sleep", Json{{"seconds", 30}}, 0.2).status().code(), StatusCode::kTimeout);

  auto second = workers.Zygote();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto status = (*second)->Call("status", Json::object(), 5);
  ASSERT_TRUE(status.ok());
  EXPECT_NE((*status)["pid"], first_pid);
  EXPECT_TRUE((*status)["configured"].is_object());
}

TEST_F(DeviceWorkersTest, ZygoteConfigureFailureIsReportedWithContext) {
  DeviceWorkers workers(Spec("zygote", {"FAKE_CONFIGURE_FAILS_ONCE=" + (dir_ / "marker").string()}), Sandbox());
  auto zygote = workers.Zygote();
  EXPECT_EQ(zygote.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zygote.status().message().find("configuring the candidate sandbox"), std::string::npos);
  EXPECT_NE(zygote.status().message().find("cannot create the sandbox root"), std::string::npos);
}

// Regression: when `configure` fails, the zygote stays alive but unconfigured, and the next
// Zygote() call sees a live worker, skips `configure` and hands it out; every candidate then fails
// with "asked to run a candidate before it was configured" until the zygote happens to die.
TEST_F(DeviceWorkersTest, ZygoteWhoseConfigureFailedIsConfiguredOnTheNextCall) {
  std::string marker = (dir_ / "configure-failed-once").string();
  DeviceWorkers workers(Spec("zygote", {"FAKE_CONFIGURE_FAILS_ONCE=" + marker}), Sandbox());
  ASSERT_FALSE(workers.Zygote().ok());
  auto zygote = workers.Zygote();
  ASSERT_TRUE(zygote.ok()) << zygote.status().ToString();
  auto status = (*zygote)->Call("status", Json::object(), 5);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE((*status)["configured"].is_object()) << status->dump();
}

// Regression: a trusted worker that died between requests (here: SIGKILL, as from the OOM
// killer) is still alive() as far as DeviceWorkers knows, so Trusted() hands out the dead worker
// and the next evaluation fails (or, with SIGPIPE at its default, kforge dies) instead of the
// worker being "started again when it has died".
TEST_F(DeviceWorkersTest, TrustedWorkerKilledWhileIdleIsRestarted) {
  ScopedIgnoreSigpipe ignore_sigpipe;
  DeviceWorkers workers(Spec(), Sandbox());
  auto first = workers.Trusted();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  int first_pid = PidOf(*first);
  ASSERT_GT(first_pid, 0);
  ASSERT_EQ(kill(first_pid, SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  auto second = workers.Trusted();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto status = (*second)->Call("status", Json::object(), 5);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_NE((*status)["pid"], first_pid);
}

}  // namespace
}  // namespace kforge
