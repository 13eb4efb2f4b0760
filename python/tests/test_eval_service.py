"""`kforge serve --eval` end to end through the real binary on the CPU: concurrent clients over two
worker slots, malformed submissions refused with nothing lost, hanging and crashing candidates
judged while the workers recover, per-client limits, and a token-protected non-local bind; the
Python client and the batch-scoring example drive it."""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
TASK = os.path.join(REPO, "tasks", "level1", "01_relu.py")
CANDIDATES = os.path.join(REPO, "tests", "corpus", "candidates", "l1_01_relu")
sys.path.insert(0, os.path.join(REPO, "python"))

from kforge_client import Client, ServiceError, reward  # noqa: E402


def candidate(name: str) -> str:
    with open(os.path.join(CANDIDATES, name)) as f:
        return f.read()


class Service:
    """`kforge serve --eval` on a free port of `bind`, stopped with SIGTERM."""

    def __init__(self, workspace, *args: str, bind: str = "127.0.0.1"):
        self.workspace = workspace
        self.process = subprocess.Popen([BINARY, "--workspace", str(workspace), "--device", "cpu", "serve", "--eval",
                                         "--port", "0", "--bind", bind, *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.match(r"serving http://[^:]+:(\d+)/", line)
        assert match, line + self.process.stderr.read()
        self.url = f"http://127.0.0.1:{match.group(1)}"

    def raw(self, method, path, body: bytes | None = None, headers=None):
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=120) == 0, self.process.stderr.read()


def stored_evaluations(workspace) -> int:
    with sqlite3.connect(os.path.join(workspace, "kforge.db")) as db:
        return db.execute("SELECT count(*) FROM evaluations WHERE kind = 'candidate'").fetchone()[0]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    server = Service(tmp_path_factory.mktemp("service") / "ws", "--gpus", "2", "--max-pending-per-client", "6")
    yield server
    server.stop()


def test_concurrent_clients_get_typed_verdicts_and_everything_is_stored(service):
    client = Client(service.url)
    assert client.health()["workers"] == 2
    task = client.add_task(open(TASK).read(), name="relu")
    assert client.add_task(open(TASK).read(), name="relu") == task  # idempotent
    expected = {"honest_relu.py": "accepted", "memo_data_ptr.py": "rejected_hack(memoization)",
                "inplace_relu_returns_input.py": "rejected_hack", "fault_syntax_error.py": "compile_error"}
    outcomes, errors = {}, []

    def one_client(names):
        try:
            results = Client(service.url).evaluate(task, [candidate(n) for n in names], within_s=600, evidence=False,
                                                   seeds=2)
            outcomes.update(zip(names, results))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    names = list(expected)
    threads = [threading.Thread(target=one_client, args=(names[i::2],)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for name, verdict in expected.items():
        assert outcomes[name]["status"] == "done", outcomes[name]
        assert outcomes[name]["verdict"].startswith(verdict), (name, outcomes[name])
        assert "evaluation" not in outcomes[name]  # evidence=False
    assert reward(outcomes["honest_relu.py"]) == 1.0  # accepted on the CPU: timings mean nothing
    assert reward(outcomes["memo_data_ptr.py"]) == -1.0
    # Each is stored with its evidence, under the id the service returned.
    full = client.result(outcomes["honest_relu.py"]["id"])
    assert full["evaluation"]["verdict"] == "accepted" and full["evaluation_id"] >= 1
    assert stored_evaluations(service.workspace) >= len(expected)
    stats = client.queue()
    assert stats["clients"]["local"]["done"] >= len(expected) and stats["latency_s"]["count"] >= len(expected)


def test_malformed_submissions_are_refused_and_lose_nothing(service):
    client = Client(service.url)
    task = client.add_task(open(TASK).read(), name="relu")
    before = stored_evaluations(service.workspace)
    done_before = client.queue()["done"]
    cases = [
        (b"{not json", 400, "malformed JSON"),
        (b"", 400, "no body"),
        (json.dumps({"task_hash": task, "candidat": "x"}).encode(), 400, "unknown field 'candidat'"),
        (json.dumps({"task_hash": task}).encode(), 400, "'candidate' must be a string"),
        (json.dumps({"task_hash": "0" * 64, "candidate": "x"}).encode(), 404, "unknown task_hash"),
        (json.dumps({"task_hash": "abc", "candidate": "x"}).encode(), 400, "64 lowercase hex"),
        (json.dumps({"task_hash": task, "candidate": "x", "options": {"seeds": 0}}).encode(), 400, "options.seeds"),
        (json.dumps({"task_hash": task, "candidate": "x", "options": {"timeout_s": 10 ** 6}}).encode(), 400, "timeout_s"),
        (json.dumps({"task": {"source": "print(1)"}, "candidate": "x"}).encode(), 400, "class Model"),
        (json.dumps([1, 2]).encode(), 400, "JSON object"),
    ]
    for body, status, words in cases:
        got, reply = service.raw("POST", "/v1/evaluations", body)
        assert got == status and words in reply["error"], (body, got, reply)
    assert service.raw("GET", "/v1/evaluations/999999")[0] == 404
    assert service.raw("GET", "/v1/evaluations/1?wait_s=-1")[0] == 400
    # Over the client's limit (6 waiting or running): the whole batch is refused, nothing queued.
    with pytest.raises(ServiceError) as refused:
        client.submit_batch(task, ["x"] * 7)
    assert refused.value.status == 429 and "limit of 6" in refused.value.message
    assert client.queue()["queued"] == 0 and client.queue()["done"] == done_before
    assert stored_evaluations(service.workspace) == before


def test_hanging_and_crashing_candidates_get_verdicts_and_the_workers_recover(service):
    client = Client(service.url)
    task = client.add_task(open(TASK).read(), name="relu")
    names = ["fault_infinite_loop.py", "fault_segfault_ctypes_hidden.py", "honest_relu.py", "honest_relu.py"]
    ids = client.submit_batch(task, [candidate(n) for n in names], seeds=2, timeout_s=8)
    results = client.wait(ids, within_s=600, evidence=False)
    assert [r["verdict_kind"] for r in results] == ["timeout", "crashed", "accepted", "accepted"], results


def test_the_example_scores_a_batch(service):
    done = subprocess.run([sys.executable, os.path.join(REPO, "python", "examples", "score_batch.py"), "--url",
                           service.url, "--seeds", "1", TASK, os.path.join(CANDIDATES, "honest_relu.py"),
                           os.path.join(CANDIDATES, "identity_clone_no_kernel.py")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.search(r"honest_relu\.py\s+accepted.*reward \+1\.00", lines[0]), done.stdout
    assert "reward -1.00" in lines[1] and "evaluations/hour" in lines[2], done.stdout


def test_a_non_local_bind_needs_tokens_and_checks_them(tmp_path):
    refused = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "serve", "--eval",
                              "--bind", "0.0.0.0", "--port", "0"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "needs --token-file" in refused.stderr
    tokens = tmp_path / "tokens"
    tokens.write_text("# client token\nalice 0123456789abcdef-alice\nbob 0123456789abcdef-bob\n")
    short = tmp_path / "short"
    short.write_text("carol short\n")
    bad = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "serve", "--eval",
                          "--token-file", str(short)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "shorter than 16" in bad.stderr
    server = Service(tmp_path / "ws", "--token-file", str(tokens), bind="0.0.0.0")
    try:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": "0123456789abcdef-bob"}):
            status, reply = server.raw("GET", "/v1/health", headers=headers)
            assert status == 401 and "Bearer" in reply["error"], (headers, status)
        assert server.raw("GET", "/", headers={})[0] == 401  # the dashboard too
        with pytest.raises(ServiceError) as unauthorized:
            Client(server.url).add_task(open(TASK).read())
        assert unauthorized.value.status == 401
        alice = Client(server.url, token="0123456789abcdef-alice")
        task = alice.add_task(open(TASK).read(), name="relu")
        [result] = alice.evaluate(task, [candidate("honest_relu.py")], evidence=False, seeds=1)
        assert result["verdict"] == "accepted" and result["client"] == "alice"
        assert Client(server.url, token="0123456789abcdef-bob").queue()["clients"]["alice"]["done"] == 1
    finally:
        server.stop()


def test_stored_evaluations_export_as_a_dataset(service, tmp_path):
    client = Client(service.url)
    task = client.add_task(open(TASK).read(), name="relu")
    client.evaluate(task, [candidate("honest_relu.py")], within_s=600, evidence=False, seeds=1)
    dataset = tmp_path / "attempts.jsonl"
    done = subprocess.run([BINARY, "--workspace", str(service.workspace), "export", "--only", "evaluations", "-o",
                           str(dataset)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in dataset.read_text().splitlines()]
    assert len(lines) == stored_evaluations(service.workspace) and "exported 0 LLM attempt(s)" in done.stderr
    honest = [line for line in lines if line["candidate"] == candidate("honest_relu.py")]
    assert honest and honest[0]["origin"] == "service:local" and honest[0]["verdict"] == "accepted"
    assert honest[0]["task_source"] == open(TASK).read() and honest[0]["kind"] == "evaluation"
    accepted = subprocess.run([BINARY, "--workspace", str(service.workspace), "--quiet", "export", "--accepted"],
                              capture_output=True, text=True, timeout=120)
    assert accepted.returncode == 0 and all(json.loads(line)["accepted"] for line in accepted.stdout.splitlines())
    bad = subprocess.run([BINARY, "--workspace", str(service.workspace), "export", "--run", "no-such-run"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no run no-such-run" in bad.stderr


def test_remote_workers_take_jobs_with_a_worker_token_and_lost_ones_time_out(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("alice 0123456789abcdef-alice\nnode1 0123456789abcdef-node1 worker\n")
    (tmp_path / "worker.token").write_text("0123456789abcdef-node1\n")
    server = Service(tmp_path / "ws", "--token-file", str(tokens), "--remote-workers", "--no-local-slots",
                     "--lease-margin", "3", bind="0.0.0.0")
    worker = None
    try:
        # A client's token cannot take jobs; no token at all is not even a client.
        headers = {"Authorization": "Bearer 0123456789abcdef-alice"}
        assert server.raw("POST", "/v1/work/next", b'{"wait_s": 0}', headers)[0] == 403
        assert server.raw("POST", "/v1/work/next", b'{"wait_s": 0}')[0] == 401
        alice = Client(server.url, token="0123456789abcdef-alice")
        task = alice.add_task(open(TASK).read(), name="relu")
        ids = alice.submit_batch(task, [candidate("honest_relu.py"), candidate("memo_data_ptr.py")], seeds=1)
        worker = subprocess.Popen([BINARY, "--workspace", str(tmp_path / "worker-ws"), "--device", "cpu", "worker",
                                   "--connect", server.url, "--token-file", str(tmp_path / "worker.token"), "--name",
                                   "node1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        results = alice.wait(ids, within_s=600, evidence=False)
        assert [r["verdict"] for r in results] == ["accepted", "rejected_hack(memoization)"], results
        assert results[0]["worker"] == "node1/node1" and results[0]["evaluation_id"] >= 1
        assert stored_evaluations(tmp_path / "ws") == 2  # stored by the service, with the worker's environment
        # A worker lost with a job in hand: the job ends with an error once its lease runs out.
        worker.kill()
        worker.wait(timeout=30)
        [hang] = alice.submit_batch(task, [candidate("fault_infinite_loop.py")], seeds=1, timeout_s=2)
        # The killed worker's last long poll may still be open on the service and take the job itself;
        # otherwise this "worker" takes it and never answers. Either way, nobody answers.
        while alice.result(hang)["status"] == "queued":
            status, taken = server.raw("POST", "/v1/work/next", b'{"worker": "doomed", "wait_s": 1}',
                                       {"Authorization": "Bearer 0123456789abcdef-node1"})
            if status == 200:
                assert taken["job"]["id"] == hang and taken["job"]["task"]["source"] == open(TASK).read()
                break
        [lost] = alice.wait([hang], within_s=120, evidence=False)
        assert lost["status"] == "error" and "did not answer within its lease" in lost["error"], lost
        late = server.raw("POST", f"/v1/work/{hang}/result", b'{"error": "late"}',
                          {"Authorization": "Bearer 0123456789abcdef-node1"})
        assert late[0] == 409, late
    finally:
        if worker and worker.poll() is None:
            worker.kill()
        server.stop()
