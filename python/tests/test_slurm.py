"""`kforge bench --slurm` on a real one-node Slurm cluster (scripts/slurm-local): the suite as a job
array of shards and a merge job after them, waited for, with the verdicts of a local bench.

Needs root (slurmd runs jobs as their users) and Debian's slurm-wlm and munge, which
`scripts/bootstrap --all` installs; elsewhere the test is skipped and says why."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

import pytest

from bench_suite import REPO, bench, make_tiny_suite, verdicts

SLURM_LOCAL = os.path.join(REPO, "scripts", "slurm-local")
SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")


def why_slurm_cannot_run() -> str:
    if os.geteuid() != 0:
        return "a local Slurm needs root (slurmd runs jobs as their users)"
    missing = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None
               and not os.path.exists(os.path.join("/usr/sbin", tool))]
    if missing:
        return f"Slurm is not installed (missing {', '.join(missing)}): scripts/bootstrap --all installs slurm-wlm and munge"
    return ""


@pytest.fixture
def slurm_cluster():
    """A one-node cluster of its own (short folder: munge's socket path has a length limit), always
    stopped, the test's failure included; yields the environment that points Slurm's tools at it."""
    why = why_slurm_cannot_run()
    if why:
        pytest.skip(why)
    folder = tempfile.mkdtemp(prefix="kforge-slurm-")
    env = dict(os.environ, SLURM_CONF=os.path.join(folder, "slurm.conf"))
    env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin"
    started = subprocess.run([SLURM_LOCAL, "start", folder], capture_output=True, text=True, timeout=120, env=env)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        yield env
    finally:
        stopped = subprocess.run([SLURM_LOCAL, "stop", folder], capture_output=True, text=True, timeout=120, env=env)
        assert stopped.returncode == 0, stopped.stderr[-3000:]
        shutil.rmtree(folder, ignore_errors=True)


def test_a_slurm_bench_has_the_verdicts_of_a_local_one(slurm_cluster, tmp_path):
    suite = make_tiny_suite(tmp_path)
    local = bench(suite, tmp_path / "local", workspace=tmp_path / "ws")
    assert local.returncode == 1, local.stderr[-3000:]  # the sort has no accepted kernel

    out = tmp_path / "slurm-out"
    # No --workspace: each array element gets its own under OUT/slurm.
    done = bench(suite, out, "--slurm", "--slurm-shards", "2", "--wait", "--sbatch-arg=--time=10",
                 env=slurm_cluster, cwd=tmp_path)
    logs = "".join(open(path, encoding="utf-8", errors="replace").read()[-2000:]
                   for path in sorted((out / "slurm").glob("*.out")) + sorted((out / "slurm").glob("*.err"))
                   ) if (out / "slurm").is_dir() else ""
    assert done.returncode == local.returncode, done.stdout[-2000:] + done.stderr[-2000:] + logs
    assert "submitted job array" in done.stdout and "level1" in done.stdout  # the ids, then the merged table
    assert verdicts(out) == verdicts(tmp_path / "local")
    for shard in (1, 2):
        part = json.load(open(out / f"bench.shard-{shard}-of-2.json", encoding="utf-8"))
        assert part["shard"] == f"{shard}/2" and part["tasks"], part
        assert (out / "slurm" / f"workspace-{shard}" / "kforge.db").exists()
    assert (out / "slurm" / "bench.sbatch").exists() and (out / "slurm" / "merge.sbatch").exists()
    assert not (tmp_path / ".kforge").exists()  # the submitting process opened no workspace


def test_the_evaluation_service_places_its_workers_with_slurm(slurm_cluster, tmp_path):
    """serve --eval --slurm-workers: the workers run as a job array, connect back, judge, and are
    cancelled when the service stops."""
    import re
    import signal
    import sys
    sys.path.insert(0, os.path.join(REPO, "python"))
    from kforge_client import Client

    binary = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
    tokens = tmp_path / "tokens"
    tokens.write_text("alice 0123456789abcdef-alice\n")
    service = subprocess.Popen([binary, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "serve", "--eval",
                                "--port", "0", "--no-local-slots", "--slurm-workers", "1", "--token-file", str(tokens),
                                "--sbatch-arg=--time=10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=slurm_cluster, cwd=tmp_path)
    try:
        serving = service.stdout.readline()
        placed = service.stdout.readline()
        match = re.match(r"serving (http://127\.0\.0\.1:\d+)/", serving)
        assert match and "Slurm job array" in placed, serving + placed + service.stderr.read()[-3000:]
        job = re.search(r"job array (\d+)", placed).group(1)
        alice = Client(match.group(1), token="0123456789abcdef-alice")
        task = alice.add_task(open(os.path.join(REPO, "tasks", "level1", "01_relu.py")).read(), name="relu")
        corpus = os.path.join(REPO, "tests", "corpus", "candidates", "l1_01_relu")
        sources = [open(os.path.join(corpus, name)).read() for name in ("honest_relu.py", "memo_data_ptr.py")]
        results = alice.evaluate(task, sources, within_s=600, evidence=False, seeds=1)
        assert [r["verdict"] for r in results] == ["accepted", "rejected_hack(memoization)"], results
        assert results[0]["worker"] == "slurm-workers/slurm-1" and results[0]["evaluation_id"] >= 1
        token_file = tmp_path / "ws" / "service" / "slurm" / "worker.token"
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
    finally:
        service.send_signal(signal.SIGTERM)
        assert service.wait(timeout=120) == 0, service.stderr.read()[-3000:]
    left = subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True, env=slurm_cluster)
    assert "RUNNING" not in left.stdout and "PENDING" not in left.stdout, left.stdout
