"""`kforge bench --gpus N` on the CPU (N worker processes): the verdicts of a one-process bench,
every task run by exactly one worker, a Ctrl-C that stops every worker, and a resumed run that
the interrupted one's claims do not block."""
from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from bench_suite import BINARY, TASKS, bench, make_tiny_suite, verdicts


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory):
    """The tiny suite benched in one process: the verdicts the parallel runs must reproduce."""
    folder = tmp_path_factory.mktemp("one-worker")
    suite = make_tiny_suite(folder)
    done = bench(suite, folder / "out", workspace=folder / "ws")
    assert done.returncode == 1, done.stderr[-3000:]  # the sort has no accepted kernel
    return suite, done.returncode, verdicts(folder / "out")


def processes_of_run(run_id: str) -> list[int]:
    """Processes whose command line carries the run's claim flag: its workers."""
    found = []
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(cmdline, "rb") as handle:
                words = handle.read().split(b"\0")
        except OSError:
            continue
        if f"--claim-run={run_id}".encode() in words:
            found.append(int(cmdline.split("/")[2]))
    return found


def compilations(out) -> dict[str, int]:
    """How many times the workers' logs say each task was compiled."""
    counts = {task: 0 for task in TASKS}
    for log in glob.glob(os.path.join(str(out), "workers", "worker-*.log")):
        with open(log, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("kforge: compiling "):
                    counts[line.split()[-1]] = counts.get(line.split()[-1], 0) + 1
    return counts


def test_an_interrupted_parallel_run_resumes_with_the_verdicts_of_one_worker(one_worker, tmp_path):
    suite, expected_status, expected = one_worker
    out, workspace = tmp_path / "out", tmp_path / "ws"
    command = [BINARY, "--device", "cpu", "--workspace", str(workspace), "bench", suite, "--out", str(out),
               "--no-compile-baseline", "--gpus", "2"]
    with open(tmp_path / "interrupted.log", "w+", encoding="utf-8") as log:
        interrupted = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 240
            while not glob.glob(str(out / ".claims" / "all" / "*" / "*.claim")) and time.monotonic() < deadline:
                assert interrupted.poll() is None, open(tmp_path / "interrupted.log").read()[-3000:]
                time.sleep(0.05)
            claims = glob.glob(str(out / ".claims" / "all" / "*" / "*.claim"))
            assert claims, "no worker claimed a task"
            run_id = os.path.basename(os.path.dirname(claims[0]))
            assert processes_of_run(run_id), "the workers carry the run's id"
            interrupted.send_signal(signal.SIGINT)
            assert interrupted.wait(timeout=30) == 128 + signal.SIGINT
        finally:
            if interrupted.poll() is None:
                interrupted.kill()
                interrupted.wait()
        log.seek(0)
        said = log.read()
    assert "stopped every worker" in said and "The same command resumes the run" in said, said[-3000:]
    assert "worker 1: cores " in said and "worker 2: cores " in said
    deadline = time.monotonic() + 10
    while processes_of_run(run_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_of_run(run_id), "a worker outlived the interrupted run"
    assert os.path.isdir(out / ".claims" / "all" / run_id)  # its claims are left behind, stale
    finished_before = {task for task in TASKS if os.path.exists(out / task / "report.json")}

    resumed = bench(suite, out, "--gpus", "2", workspace=workspace)
    assert resumed.returncode == expected_status, resumed.stderr[-3000:]
    assert verdicts(out) == expected
    assert set(os.listdir(out / ".claims" / "all")) == {"lock"}  # the stale run's claims swept, its own removed
    # Each task ran once in the resumed run, unless the interrupted one had finished it.
    assert compilations(out) == {task: 0 if task in finished_before else 1 for task in TASKS}, resumed.stderr[-3000:]
    progress = json.load(open(out / "progress.json", encoding="utf-8"))
    assert (progress["state"], progress["done"], progress["total"]) == ("finished", 3, 3)
    assert progress["reused"] == len(finished_before)
    # The summary is the one --no-run writes: without the device it ran on.
    assert "device" not in json.load(open(out / "bench.json", encoding="utf-8"))


def test_worker_counts_that_cannot_work_are_usage_errors(tmp_path):
    suite = make_tiny_suite(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    cases = [
        (("--gpus", "all"), "with --device cpu give the number of CPU workers"),
        (("--gpus", "0"), "--gpus must be a number of workers"),
        (("--gpus", "2", "--no-run"), "--no-run runs nothing"),
    ]
    for extra, message in cases:
        done = bench(suite, tmp_path / "out", *extra, workspace=tmp_path / "ws", env=env)
        assert done.returncode == 2 and message in done.stderr, (extra, done.stderr[-2000:])
    # More GPU workers than GPUs: this machine shows none, or the one CUDA_VISIBLE_DEVICES names.
    for visible, message in ((None, "cannot count the GPUs"), ("0", "--gpus 2: this machine shows 1 GPU(s) (0)")):
        if visible is None and shutil.which("nvidia-smi", path="/usr/bin:/bin"):
            continue  # a GPU machine: nvidia-smi counts them
        gpu_env = dict(env, PATH="/usr/bin:/bin")
        if visible is not None:
            gpu_env["CUDA_VISIBLE_DEVICES"] = visible
        done = subprocess.run([BINARY, "--device", "cuda:0", "--workspace", str(tmp_path / "ws"), "bench", suite,
                               "--out", str(tmp_path / "out"), "--gpus", "2"], capture_output=True, text=True,
                              timeout=60, env=gpu_env)
        assert done.returncode == 2 and message in done.stderr, (visible, done.stderr[-2000:])
