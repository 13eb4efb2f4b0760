"""`kforge baseline` end to end through the real binary on the CPU: --jobs compiles the tasks'
torch.compile ahead in parallel workers, and the timings that follow find every graph in the
workspace's compile cache; --missing times only what the store lacks."""
from __future__ import annotations

import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
TASKS = [os.path.join(REPO, "tasks", "level1", "21_hardtanh.py"), os.path.join(REPO, "tasks", "level1", "20_softplus.py")]
THIRD = os.path.join(REPO, "tasks", "level2", "01_linear_relu.py")


def baseline(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "baseline", "--json", *args],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_jobs_compile_ahead_and_missing_times_only_what_is_not_stored(tmp_path):
    first, reports = baseline(tmp_path, "--jobs", "2", *TASKS)
    assert "compiling 2 task(s) with torch.compile ahead, 2 at a time" in first.stderr
    assert first.stderr.count("  compiled level1/") == 2, first.stderr[-3000:]
    assert [r["task"] for r in reports] == ["level1/21_hardtanh", "level1/20_softplus"]
    for report in reports:
        compiled = report["modes"]["compile"]
        # Every graph the timing compiled came from the cache the workers filled.
        assert compiled["compile_cache"]["hits"] >= 1 and compiled["compile_cache"]["misses"] == 0, compiled
        assert report["modes"]["eager"]["kept"] is True
    assert os.listdir(tmp_path / "ws" / "cache" / "inductor")

    again, stored = baseline(tmp_path, "--missing", "--jobs", "2", *TASKS, THIRD)
    # Only the task the store lacks is compiled ahead and timed.
    assert "compiling 1 task(s) with torch.compile ahead" in again.stderr
    assert again.stderr.count("  compiled ") == 1 and "  compiled level2/01_linear_relu" in again.stderr
    assert again.stderr.count("timing ") == 2  # eager and compile of the third task
    for before, after in zip(reports, stored[:2]):
        for mode in ("eager", "compile"):
            assert after["modes"][mode]["from_store"] is True
            assert after["modes"][mode]["samples_ms"] == before["modes"][mode]["samples_ms"]
    assert "from_store" not in stored[2]["modes"]["compile"] and stored[2]["modes"]["compile"]["kept"] is True


def test_jobs_must_be_positive(tmp_path):
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "baseline", "--jobs", "0", TASKS[0]],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--jobs must be at least 1 (got 0)" in done.stderr
