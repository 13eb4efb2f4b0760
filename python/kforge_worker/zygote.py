"""The zygote: a warm process (torch and triton imported, CUDA untouched) that forks one
short-lived, sandboxed child per candidate.

Spare children are forked ahead of time: each enters its sandbox, initialises CUDA and waits for a
job on a socket, so a candidate pays neither for importing torch nor for creating a CUDA context.
Once candidates come one after another on a GPU, three spares wait, so the one a candidate gets
has had two whole evaluations to warm up. The zygote enforces the time and memory limits, kills
the child's whole process group when they are exceeded and when the child ends, and reports how
the child ended together with the result file the child wrote.
"""
from __future__ import annotations

import atexit
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Any

from . import audit, harness, isolation, memory_plan, runtime_warmup, sandbox, shared_memory
from .sandbox import SandboxConfig
from .errors import UserError
from .protocol import read_message, write_message

RESULT_LIMIT_BYTES = 32 << 20
TAIL_BYTES = 8192


@dataclass
class Spare:
    pid: int
    job_fd: int  # our end of a Unix socket pair: the job, then the shared arenas' descriptors
    private_dir: str


def _sweep_stale(base: str) -> int:
    """Removes the folders of zygotes that no longer run (a kforge killed mid-evaluation)."""
    swept = 0
    for name in os.listdir(base):
        path = os.path.join(base, name)
        if name.startswith("zygote-") and name[7:].isdigit():
            if os.path.exists(f"/proc/{name[7:]}") and int(name[7:]) != os.getpid():
                continue
        elif not name.startswith("candidate-"):
            continue
        shutil.rmtree(path, ignore_errors=True)
        swept += 1
    return swept


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _fingerprint(paths: list[str]) -> dict[str, Any]:
    prints = {}
    for path in paths:
        try:
            info = os.stat(path)
            prints[path] = [info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode]
        except OSError:
            prints[path] = None
    return prints


def _channel() -> tuple[int, int]:
    """A Unix socket pair (ours, the child's): it carries the job and then file descriptors."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return ours.detach(), theirs.detach()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def redirect_output(private_dir: str) -> None:
    for stream, name in ((1, "stdout.txt"), (2, "stderr.txt")):
        fd = os.open(os.path.join(private_dir, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, stream)
        os.close(fd)


def _warm_cuda(device: str, memory_fraction: float) -> None:
    """Creates the CUDA context and starts the profiler's tracing library and Triton's runtime
    once, while the process waits for its job, so none of them is paid for inside an evaluation.
    The candidate may allocate at most `memory_fraction` of the GPU, so the trusted worker beside
    it keeps room to judge it."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.set_device(torch.device(device))
    if 0 < memory_fraction < 1:
        torch.cuda.set_per_process_memory_fraction(memory_fraction, torch.device(device))
    probe = torch.ones(1, device=device)
    with profile(activities=[ProfilerActivity.CUDA]):
        probe.add_(1)
        torch.cuda.synchronize()
    try:
        runtime_warmup.after_cuda(device)
    except Exception:  # only a head start: the candidate's own first call does the same work
        traceback.print_exc()


def child_main(job_fd: int, private_dir: str, config: SandboxConfig, device: str,
               entered: dict[str, Any] | None = None) -> None:
    """A candidate process's life: enter the sandbox (unless `entered` says it already has),
    create the CUDA context, wait for the job, run it. Shared by forked spares and fresh
    interpreters."""
    keep = {0, 1, 2, job_fd}
    for fd in range(3, 1024):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    started = time.time()
    report = entered if entered is not None else sandbox.enter_sandbox(private_dir, config, {job_fd})
    if device.startswith("cuda"):
        _warm_cuda(device, config.gpu_memory_fraction)
    ready = time.time()
    job = read_message(job_fd)
    if job is None:
        return
    # From here on the process runs untrusted code: the runtime's audit hooks report what the
    # kernel's filter would also stop, and the filter holds every thread.
    audit.install(private_dir, [os.path.join(str(job.get("exchange_dir", "")), "candidate.py")])
    report["seccomp"] = isolation.lock_down(bytes.fromhex(config.seccomp_bpf_hex))
    # How long this process took to get ready, and how long its job waited for that.
    report["warmup_s"] = ready - started
    report["job_waited_s"] = max(0.0, ready - float(job.get("sent_at", ready)))
    harness.run_job(job, private_dir, report, lambda: _open_shared(job, job_fd, device))


def _open_shared(job: dict[str, Any], job_fd: int, device: str) -> tuple[dict[str, shared_memory.Arena], int]:
    """The evaluation's shared arenas and its session's socket, from the descriptors that follow
    the job."""
    shared = job.get("shared")
    if not shared:
        raise RuntimeError("the job came without the evaluation's shared memory and session")
    import torch

    described = shared["arenas"]
    descriptors = shared_memory.receive_descriptors(job_fd, len(described) + 1)
    arenas = {entry["name"]: shared_memory.Arena.open(entry["name"], torch.device(device), descriptor, int(entry["bytes"]))
              for entry, descriptor in zip(described, descriptors)}
    return arenas, descriptors[-1]


class Zygote:
    def __init__(self, device: str):
        self.device = device
        if device.startswith("cuda"):
            runtime_warmup.before_fork()
        self.config: SandboxConfig | None = None
        self.spares: list[Spare] = []
        self.candidates_run = 0
        self.fresh_processes: list[subprocess.Popen] = []  # kept so Popen does not reap them behind our back
        atexit.register(self.shutdown)

    def shutdown(self) -> None:
        """On the way out: the spares end and this zygote's folder goes."""
        self.discard_spares()
        if self.config is not None:
            shutil.rmtree(self.config.root, ignore_errors=True)

    def configure(self, request: dict[str, Any]) -> dict[str, Any]:
        self.discard_spares()
        config = SandboxConfig.from_json(request["sandbox"])
        probed = isolation.probe()
        if not probed["namespaces"]:
            if not config.allow_unisolated:
                raise UserError(
                    "kforge cannot isolate candidate processes on this machine: " + probed["why"] + ". It needs "
                    "unprivileged user namespaces (user.max_user_namespaces > 0, and on Debian/Ubuntu "
                    "kernel.unprivileged_userns_clone=1 or kernel.apparmor_restrict_unprivileged_userns=0). "
                    "Pass --unsafe-no-isolation to run candidates without them: they could then read your files "
                    "and reach the network.")
            config.namespaces = False
        self.config = config
        # Each zygote keeps its candidates' folders under its own; folders of zygotes that died
        # (a killed kforge) are swept.
        base = config.root
        os.makedirs(base, exist_ok=True)
        os.chmod(base, 0o711)  # the sandbox user must reach its own folder inside
        swept = _sweep_stale(base)
        config.root = os.path.join(base, f"zygote-{os.getpid()}")
        os.makedirs(config.root, exist_ok=True)
        os.chmod(config.root, 0o711)
        return {"configured": True, "isolation": probed, "swept": swept}

    # -- spares ---------------------------------------------------------------------------
    def ensure_spare(self) -> None:
        """Prepares the next candidates' processes ahead of time (not for fresh interpreters, whose
        point is to start from nothing when the candidate arrives)."""
        if self.config is None or self.config.isolation != "fork":
            return
        # One spare for a single candidate; once a second may follow, on a GPU, enough that each
        # has had two evaluations' time to get ready.
        wanted = 3 if self.device.startswith("cuda") and self.candidates_run else 1
        while len(self.spares) < wanted:
            self.spares.append(self._fork_spare())

    def discard_spares(self) -> None:
        for spare in self.spares:
            os.close(spare.job_fd)  # the child reads end-of-file and exits
            try:
                os.waitpid(spare.pid, 0)
            except ChildProcessError:
                pass
            shutil.rmtree(spare.private_dir, ignore_errors=True)
        self.spares = []

    def _fork_spare(self) -> Spare:
        assert self.config is not None
        private_dir = tempfile.mkdtemp(prefix="candidate-", dir=self.config.root)
        sandbox.prepare_private_dir(private_dir, self.config.user)
        if self.config.isolation == "spawn":
            return self._spawn_fresh(private_dir)
        write_fd, read_fd = _channel()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(write_fd)
                redirect_output(private_dir)
                child_main(read_fd, private_dir, self.config, self.device)
            except BaseException:
                traceback.print_exc()  # lands in the child's stderr.txt, reported as its tail
                code = 70
            finally:
                os._exit(code)
        os.close(read_fd)
        return Spare(pid, write_fd, private_dir)

    def _spawn_fresh(self, private_dir: str) -> Spare:
        """A fresh interpreter per candidate: slower (imports torch and triton again), for
        machines where forking a warm process is not wanted, and as the benchmarks' comparison."""
        assert self.config is not None
        config_path = os.path.join(private_dir, "sandbox.json")
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump(dataclasses.asdict(self.config), handle)
        write_fd, read_fd = _channel()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        process = subprocess.Popen([sys.executable, "-m", "kforge_worker.fresh_child", config_path, private_dir,
                                    self.device, str(read_fd)], pass_fds=(read_fd,), env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(read_fd)
        self.fresh_processes.append(process)
        return Spare(process.pid, write_fd, private_dir)

    # -- running a candidate --------------------------------------------------------------
    def run_candidate(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.config is None:
            raise RuntimeError("the zygote was asked to run a candidate before it was configured")
        spare = self.spares.pop(0) if self.spares else self._fork_spare()
        self.candidates_run += 1
        job = dict(request["job"], sent_at=time.time())
        protected = list(request.get("protected_paths", []))
        before = _fingerprint(protected)
        started = time.monotonic()
        descriptors = self._fetch_arenas(job)
        try:
            write_message(spare.job_fd, job)
            if descriptors:
                shared_memory.send_descriptors(spare.job_fd, descriptors)
        except OSError:
            pass  # the spare died already; waiting below reports how
        finally:
            os.close(spare.job_fd)
            for descriptor in descriptors:
                os.close(descriptor)
        ended = self._wait(spare.pid, float(request.get("timeout_s", 120.0)),
                           int(request.get("memory_limit_bytes", 0)), started)
        _kill_group(spare.pid)  # nothing the candidate started may outlive it and touch its outputs
        for process in self.fresh_processes:
            if process.pid == spare.pid:
                process.returncode = ended["exit_code"] if ended["exit_code"] is not None else -1  # reaped above
        self.fresh_processes = [p for p in self.fresh_processes if p.pid != spare.pid]
        ended["wall_s"] = time.monotonic() - started
        ended["private_dir"] = spare.private_dir
        ended["stdout_tail"] = _tail(os.path.join(spare.private_dir, "stdout.txt"))
        ended["stderr_tail"] = _tail(os.path.join(spare.private_dir, "stderr.txt"))
        ended["result"] = self._read_result(spare.private_dir)
        ended["sandbox_violations"] = audit.read_violations(spare.private_dir)
        after = _fingerprint(protected)
        ended["tampered_paths"] = [path for path in protected if before.get(path) != after.get(path)]
        shutil.rmtree(spare.private_dir, ignore_errors=True)
        return ended

    @staticmethod
    def _fetch_arenas(job: dict[str, Any]) -> list[int]:
        """The shared arenas' descriptors and the session's socket from the trusted worker; without
        them the job goes out bare and the candidate's process reports that it could not run."""
        shared = job.get("shared")
        if not shared:
            return []
        try:
            return shared_memory.fetch_descriptors(shared["socket"], len(shared["arenas"]) + 1)
        except (OSError, KeyError, TypeError):
            job["shared"] = None
            return []

    def _wait(self, pid: int, timeout_s: float, memory_limit: int, started: float) -> dict[str, Any]:
        """Waits for the candidate's process, enforcing the time limit, the memory limit on its whole
        process tree (proportional set size: pages shared with the warm parent count by share)
        and the bound on its number of processes. Looks at the process from outside as it runs:
        its namespaces and seccomp mode are evidence the candidate cannot forge."""
        assert self.config is not None
        peak_rss = 0
        peak_processes = 0
        seen: dict[str, Any] = {}
        pause = 0.001
        next_tree = 0.0
        rss = 0
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return self._exit_report(status, peak_rss, None, peak_processes, seen)
            elapsed = time.monotonic() - started
            reason = None
            if elapsed >= next_tree:  # the whole tree, ten times a second
                next_tree = elapsed + 0.1
                tree = isolation.descendants(pid)
                peak_processes = max(peak_processes, len(tree) + 1)
                rss = sum(isolation.proportional_bytes(p) for p in [pid] + tree) or memory_plan.rss_bytes(pid)
                if tree:
                    seen = self._observe(tree[0], seen)
                if len(tree) + 1 > self.config.max_processes:
                    reason = "process_limit"
            peak_rss = max(peak_rss, rss)
            if elapsed > timeout_s:
                reason = "timeout"
            elif memory_limit and rss > memory_limit:
                reason = "memory_limit"
            if reason:
                _kill_group(pid)
                _, status = os.waitpid(pid, 0)
                return self._exit_report(status, peak_rss, reason, peak_processes, seen)
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    @staticmethod
    def _observe(candidate: int, before: dict[str, Any]) -> dict[str, Any]:
        """The candidate's isolation as the kernel reports it: which namespaces differ from the
        zygote's own, and its seccomp and no-new-privileges state. Observations add up: a
        process on its way out no longer shows its mount and network namespaces."""
        ours = isolation.namespaces_of("self")
        theirs = isolation.namespaces_of(candidate)
        fields = isolation.status_fields(candidate, ("Seccomp", "NoNewPrivs", "Uid"))
        seen = dict(before)
        own = set(seen.get("own_namespaces", [])) | {name for name, inode in theirs.items() if ours.get(name) != inode}
        seen["own_namespaces"] = sorted(own)
        for key, field in (("seccomp_mode", "Seccomp"), ("no_new_privs", "NoNewPrivs")):
            if field in fields:
                seen[key] = max(seen.get(key, "0"), fields[field])
        if "Uid" in fields:
            seen["uid"] = fields["Uid"].split()[0]
        return seen

    @staticmethod
    def _exit_report(status: int, peak_rss: int, killed_for: str | None, peak_processes: int,
                     seen: dict[str, Any]) -> dict[str, Any]:
        report: dict[str, Any] = {"killed_for": killed_for, "peak_rss_bytes": peak_rss,
                                  "exit_code": None, "signal": None, "peak_processes": peak_processes,
                                  "isolation_seen": seen}
        if os.WIFEXITED(status):
            report["exit_code"] = os.WEXITSTATUS(status)
        elif os.WIFSIGNALED(status):
            report["signal"] = os.WTERMSIG(status)
            report["signal_name"] = signal.Signals(report["signal"]).name
        return report

    @staticmethod
    def _read_result(private_dir: str) -> dict[str, Any] | None:
        path = os.path.join(private_dir, "result.json")
        try:
            if os.path.getsize(path) > RESULT_LIMIT_BYTES:
                return None
            with open(path, encoding="utf-8") as handle:
                result = json.load(handle)
            return result if isinstance(result, dict) else None
        except (OSError, ValueError):
            return None
