"""`kforge baseline` end to end through the real binary on the CPU: --missing times only what the
workspace's store lacks, and each torch.compile timing is a first compile, in compile caches of its
own, and says how many of its graphs it found in a cache (none)."""
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

    # Without --missing the timing is measured again, and compiled again as a first compile: each
    # timing compiles in compile caches of its own, emptied after, never in the workspace's.
    _, (remeasured,) = baseline(tmp_path, FIRST)
    assert "from_store" not in remeasured["modes"]["compile"]
    assert remeasured["modes"]["compile"]["compile_cache"] == {"hits": 0, "misses": 1}
    assert not any(files for _, _, files in os.walk(tmp_path / "ws" / "cache" / "inductor"))
