// A fake kforge_worker package (system python3, standard library only) that speaks the worker
// protocol, and a fixture that writes it into a private temporary folder. The fake's behaviour
// is picked by the op of each request and, per process, by environment variables:
// FAKE_WORKER_MODE=silent never answers anything; FAKE_CONFIGURE_FAILS_ONCE=<path> makes the first
// `configure` a user error (the marker file at <path> remembers it across processes).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "sandbox/worker.h"
#include "sandbox_test_util.h"

namespace kforge {

inline constexpr char kFakePython[] = "/usr/bin/python3";

inline constexpr char kFakeWorkerMain[] = R"PY(
import json
import os
import struct
import sys
import time

REQUEST_FD, RESPONSE_FD = 3, 4


def read_exactly(count):
    data = b""
    while len(data) < count:
        chunk = os.read(REQUEST_FD, count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_message():
    header = read_exactly(4)
    if header is None:
        return None
    (length,) = struct.unpack(">I", header)
    body = read_exactly(length)
    return None if body is None else json.loads(body.decode("utf-8"))


def write_frame(body):
    data = struct.pack(">I", len(body)) + body
    while data:
        data = data[os.write(RESPONSE_FD, data):]


def answer(request_id, result):
    write_frame(json.dumps({"id": request_id, "ok": True, "result": result}).encode("utf-8"))


def refuse(request_id, kind, message, traceback=""):
    error = {"kind": kind, "message": message, "traceback": traceback}
    write_frame(json.dumps({"id": request_id, "ok": False, "error": error}).encode("utf-8"))


def main():
    role = sys.argv[sys.argv.index("--role") + 1]
    device = sys.argv[sys.argv.index("--device") + 1]
    if os.environ.get("FAKE_WORKER_MODE") == "silent":
        time.sleep(3600)
    configured = None
    configure_calls = 0
    while True:
        request = read_message()
        if request is None:
            return 0
        op, request_id = request.get("op"), request.get("id")
        if op == "hello":
            answer(request_id, {"role": role, "device": device, "pid": os.getpid()})
        elif op == "echo":
            answer(request_id, request)
        elif op == "environ":
            answer(request_id, dict(os.environ))
        elif op == "user_error":
            refuse(request_id, "user", request.get("message", "the task is malformed"))
        elif op == "internal_error":
            refuse(request_id, "internal", "ZeroDivisionError: division by zero",
                   "Traceback (most recent call last):\n  File \"fake.py\", line 1\n")
        elif op == "crash":
            sys.stderr.write("fake worker: the disk is on fire\n")
            sys.stderr.flush()
            os._exit(3)
        elif op == "sleep":
            time.sleep(request["seconds"])
            answer(request_id, {"slept": request["seconds"]})
        elif op == "garbage":
            write_frame(b"this is not json")
        elif op == "wrong_id":
            answer(request_id + 1000, {})
        elif op == "exit_after_reply":
            answer(request_id, {})
            os._exit(0)
        elif op == "configure":
            configure_calls += 1
            marker = os.environ.get("FAKE_CONFIGURE_FAILS_ONCE")
            if marker and not os.path.exists(marker):
                open(marker, "w").close()
                refuse(request_id, "user", "cannot create the sandbox root")
            else:
                configured = request["sandbox"]
                answer(request_id, {"configured": True, "isolation": {"namespaces": True, "why": "fake"}})
        elif op == "status":
            answer(request_id, {"pid": os.getpid(), "configured": configured, "configure_calls": configure_calls})
        else:
            refuse(request_id, "internal", "unknown op %r" % (op,))


if __name__ == "__main__":
    sys.exit(main())
)PY";

class FakeWorkerTest : public TempDirTest {
 protected:
  void SetUp() override {
    if (access(kFakePython, X_OK) != 0) GTEST_SKIP() << kFakePython << " is needed for the fake worker";
    TempDirTest::SetUp();
    Write("kforge_worker/__init__.py", "");
    Write("kforge_worker/__main__.py", kFakeWorkerMain);
  }

  WorkerSpec Spec(const std::string& role = "trusted", const std::vector<std::string>& extra_environment = {}) const {
    WorkerSpec spec;
    spec.python = kFakePython;
    spec.python_path = dir_.string();
    spec.role = role;
    spec.device = "cpu";
    spec.environment = {"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"};
    spec.environment.insert(spec.environment.end(), extra_environment.begin(), extra_environment.end());
    spec.start_timeout_s = 10;
    return spec;
  }

  std::unique_ptr<Worker> StartWorker(const WorkerSpec& spec) {
    auto worker = Worker::Start(spec);
    EXPECT_TRUE(worker.ok()) << worker.status().ToString();
    return worker.ok() ? std::move(worker).value() : nullptr;
  }
};

}  // namespace kforge
