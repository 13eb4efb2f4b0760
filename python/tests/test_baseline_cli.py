"""`kforge baseline` end to end through the real binary on the CPU: --missing times only what the
workspace's store lacks; each torch.compile timing compiles its graphs anew, whatever the
workspace's compile cache holds, and says so; --jobs compiles torch.compile ahead in workers that
end before anything is timed."""
from __future__ import annotations

import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
FIRST = os.path.join(REPO, "tasks", "level1", "21_hardtanh.py")
SECOND = os.path.join(REPO, "tasks", "level1", "20_softplus.py")


def baseline(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "baseline", "--json", *args],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_missing_times_only_what_is_not_stored_and_compiles_say_where_their_graphs_came_from(tmp_path):
    first, (measured,) = baseline(tmp_path, FIRST)
    assert first.stderr.count("timing level1/21_hardtanh") == 2
    assert measured["modes"]["eager"]["kept"] is True
    # A fresh workspace: Inductor compiled the graph anew.
    assert measured["modes"]["compile"]["compile_cache"] == {"hits": 0, "misses": 1}

    again, (stored, new) = baseline(tmp_path, "--missing", FIRST, SECOND)
    # Only the task the store lacks is timed; the other is printed as stored.
    assert again.stderr.count("timing ") == 2 and "timing level1/20_softplus (compile)" in again.stderr
    for mode in ("eager", "compile"):
        assert stored["modes"][mode]["from_store"] is True
        assert stored["modes"][mode]["samples_ms"] == measured["modes"][mode]["samples_ms"]
    assert stored["modes"]["compile"]["compile_cache"] == {"hits": 0, "misses": 1}
    assert "from_store" not in new["modes"]["compile"] and new["modes"]["compile"]["kept"] is True

    # Without --missing the timing is measured again. Its graph is in the workspace's cache now,
    # but a timed torch.compile is compiled anew all the same (one loaded from the cache can run
    # slower): the report says so.
    _, (remeasured,) = baseline(tmp_path, FIRST)
    assert "from_store" not in remeasured["modes"]["compile"]
    assert remeasured["modes"]["compile"]["compile_cache"] == {"hits": 0, "misses": 1}
    assert os.listdir(tmp_path / "ws" / "cache" / "inductor")


def test_jobs_compile_ahead_in_workers_that_end_before_the_timings(tmp_path):
    third = os.path.join(REPO, "tasks", "level2", "01_linear_relu.py")
    done, reports = baseline(tmp_path, "--jobs", "2", FIRST, SECOND)
    log = done.stderr
    assert "compiling torch.compile ahead, 2 task(s) at a time" in log, log[-3000:]
    assert log.count("  compiled level1/") == 2, log[-3000:]
    # Every compile ahead ends before the first timing begins.
    assert log.rindex("  compiled level1/") < log.index("timing level1/"), log[-3000:]
    assert [r["task"] for r in reports] == ["level1/21_hardtanh", "level1/20_softplus"]
    for report in reports:
        # The timing compiled its graph anew, with its kernels' binaries from the cache the
        # workers filled.
        assert report["modes"]["compile"]["compile_cache"] == {"hits": 0, "misses": 1}, report

    # With --missing only the task the store lacks needs compiling: one task is not compiled ahead.
    again, stored = baseline(tmp_path, "--missing", "--jobs", "2", FIRST, SECOND, third)
    assert "compiling torch.compile ahead" not in again.stderr
    assert again.stderr.count("timing ") == 2 and "timing level2/01_linear_relu (compile)" in again.stderr
    assert all(r["modes"]["compile"].get("from_store") for r in stored[:2])


def test_jobs_must_be_positive(tmp_path):
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "baseline", "--jobs", "0", FIRST],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--jobs must be at least 1 (got 0)" in done.stderr, done.stderr
