"""`kforge bench SUITE_DIR` end to end through the real binary on the CPU: every task optimized,
the per-level table and bench.json, a resumed run that reuses finished tasks, and --fresh."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))


def bench(suite, tmp_path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "bench", str(suite),
                           "--out", str(tmp_path / "out"), *extra], capture_output=True, text=True, timeout=900)


def make_suite(tmp_path):
    """Two tasks that compile to accepted kernels and one (a sort) that strict mode rejects."""
    suite = tmp_path / "suite"
    for level, task in (("level1", "21_hardtanh.py"), ("level2", "01_linear_relu.py")):
        os.makedirs(suite / level, exist_ok=True)
        shutil.copy(os.path.join(REPO, "tasks", level, task), suite / level / task)
    shutil.copy(os.path.join(REPO, "python", "tests", "tasks", "sort_rows.py"), suite / "level1" / "31_sort_rows.py")
    return suite


def test_bench_prints_the_table_writes_json_and_resumes(tmp_path):
    suite = make_suite(tmp_path)
    done = bench(suite, tmp_path)
    # The sort has no accepted kernel: the run says so and exits 1.
    assert done.returncode == 1, done.stderr[-3000:]
    assert "1 task(s) without an accepted kernel: exit status 1" in done.stdout
    assert "level1" in done.stdout and "level2" in done.stdout and "fast_0" in done.stdout
    assert "level1/31_sort_rows" in done.stdout  # sort has no kernel: listed as failed
    # The coverage report: the op that stopped it, under the task and counted over the failures.
    assert "    left to PyTorch: aten.sort.default\n" in done.stdout
    assert "ops left to PyTorch by failing tasks (tasks): aten.sort.default (1)" in done.stdout
    report = json.load(open(tmp_path / "out" / "level1" / "31_sort_rows" / "report.json"))
    assert report["compile"]["left_to_pytorch"] == [
        {"group": "sort", "ops": ["aten.sort.default"], "reason": "the compiler has no kernel form for it"}]
    summary = json.load(open(tmp_path / "out" / "bench.json"))
    level1, level2 = summary["levels"]["level1"], summary["levels"]["level2"]
    assert (level1["tasks"], level1["accepted"]) == (2, 1)
    assert (level2["tasks"], level2["accepted"]) == (1, 1)
    assert [f["task"] for f in summary["levels"]["all"]["failed"]] == ["level1/31_sort_rows"]
    assert summary["levels"]["all"]["failed"][0]["left_to_pytorch"] == ["aten.sort.default"]
    assert summary["levels"]["all"]["left_to_pytorch"] == {"aten.sort.default": 1}
    assert level2["left_to_pytorch"] == {}  # the linear layer's ops all have kernels
    assert {t["task"] for t in summary["tasks"]} == {"level1/21_hardtanh", "level1/31_sort_rows",
                                                     "level2/01_linear_relu"}
    assert os.path.exists(tmp_path / "out" / "level2" / "01_linear_relu" / "model_new.py")

    again = bench(suite, tmp_path)
    assert again.returncode == 1, again.stderr[-3000:]
    assert again.stderr.count("done earlier") == 3
    assert json.load(open(tmp_path / "out" / "bench.json"))["levels"] == summary["levels"]

    # A task whose source changed is redone; --fresh redoes everything.
    with open(suite / "level1" / "21_hardtanh.py", "a", encoding="utf-8") as handle:
        handle.write("\n# edited\n")
    edited = bench(suite, tmp_path)
    assert edited.stderr.count("done earlier") == 2
    fresh = bench(suite, tmp_path, "--fresh")
    assert fresh.returncode == 1 and "done earlier" not in fresh.stderr


def test_no_run_summarizes_the_reports_there_are(tmp_path):
    suite = make_suite(tmp_path)
    os.makedirs(suite / "level3")
    shutil.copy(os.path.join(REPO, "tasks", "level1", "01_relu.py"), suite / "level3" / "01_relu.py")
    first = bench(suite, tmp_path)
    assert first.returncode == 1, first.stderr[-3000:]  # the sort
    shutil.rmtree(tmp_path / "out" / "level3")
    summary_only = bench(suite, tmp_path, "--no-run")
    assert summary_only.returncode == 1 and "compiling" not in summary_only.stderr
    assert "not run (no report yet): 1 task(s)" in summary_only.stdout
    summary = json.load(open(tmp_path / "out" / "bench.json"))
    assert summary["not_run"] == ["level3/01_relu"] and "level3" not in summary["levels"]


def test_bench_of_a_folder_without_tasks_is_a_usage_error(tmp_path):
    os.makedirs(tmp_path / "empty")
    done = bench(tmp_path / "empty", tmp_path)
    assert done.returncode == 2 and "no task files" in done.stderr
    done = bench(tmp_path / "missing", tmp_path)
    assert done.returncode == 2 and "not a folder" in done.stderr


def test_shards_split_the_suite_and_no_run_summarizes_their_union(tmp_path):
    suite = make_suite(tmp_path)
    first = bench(suite, tmp_path, "--shard", "1/2")
    second = bench(suite, tmp_path, "--shard", "2/2")
    # Exactly one shard holds the sort, which has no accepted kernel.
    assert sorted([first.returncode, second.returncode]) == [0, 1], first.stderr[-2000:] + second.stderr[-2000:]
    one = json.load(open(tmp_path / "out" / "bench.shard-1-of-2.json"))
    two = json.load(open(tmp_path / "out" / "bench.shard-2-of-2.json"))
    names_one, names_two = {t["task"] for t in one["tasks"]}, {t["task"] for t in two["tasks"]}
    assert names_one and names_two and not names_one & names_two
    assert names_one | names_two == {"level1/21_hardtanh", "level1/31_sort_rows", "level2/01_linear_relu"}
    assert one["shard"] == "1/2"
    union = bench(suite, tmp_path, "--no-run")
    assert union.returncode == 1 and "compiling" not in union.stderr
    summary = json.load(open(tmp_path / "out" / "bench.json"))
    assert summary["not_run"] == [] and summary["levels"]["all"]["tasks"] == 3
    # The same split every time: a shard run again finds its own tasks done.
    again = bench(suite, tmp_path, "--shard", "1/2")
    assert again.stderr.count("done earlier") == len(names_one)


def test_a_malformed_shard_is_a_usage_error(tmp_path):
    suite = make_suite(tmp_path)
    for shard in ("3/2", "0/2", "1", "a/b", "1/2x"):
        done = bench(suite, tmp_path, "--shard", shard)
        assert done.returncode == 2 and "--shard must be I/N" in done.stderr, (shard, done.stderr[-500:])


def test_a_second_bench_reuses_every_stored_baseline(tmp_path):
    """Eager timings (the only baseline on the CPU) are stored by task, machine and precision, and a
    later bench in the same workspace takes them instead of measuring; --fresh-baselines measures."""
    suite = tmp_path / "suite"
    os.makedirs(suite / "level1")
    for task in ("21_hardtanh.py", "18_sigmoid.py"):
        shutil.copy(os.path.join(REPO, "tasks", "level1", task), suite / "level1" / task)
    first = bench(suite, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert json.load(open(tmp_path / "out" / "bench.json"))["baselines"]["reused"] == 0
    again = bench(suite, tmp_path, "--fresh")
    assert again.returncode == 0, again.stderr[-3000:]
    summary = json.load(open(tmp_path / "out" / "bench.json"))
    assert summary["baselines"] == {"reused": 2, "measured": 0}
    assert "baselines: 2 reference timing(s) reused from the store, 0 measured" in again.stdout
    fresh = bench(suite, tmp_path, "--fresh", "--fresh-baselines")
    assert json.load(open(tmp_path / "out" / "bench.json"))["baselines"] == {"reused": 0, "measured": 2}
    # Another precision policy is another baseline.
    other = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "--precision", "tf32", "bench",
                            str(suite), "--out", str(tmp_path / "out-tf32")], capture_output=True, text=True, timeout=900)
    assert other.returncode == 0, other.stderr[-3000:]
    assert json.load(open(tmp_path / "out-tf32" / "bench.json"))["baselines"]["reused"] == 0


def test_the_trusted_worker_does_not_grow_over_a_bench(tmp_path):
    """Its memory after each evaluation is released stays where the first one left it."""
    suite = tmp_path / "suite"
    os.makedirs(suite / "level1")
    for task in ("01_relu.py", "03_softmax.py", "17_gelu.py", "18_sigmoid.py", "21_hardtanh.py"):
        shutil.copy(os.path.join(REPO, "tasks", "level1", task), suite / "level1" / task)
    done = bench(suite, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    memory = json.load(open(tmp_path / "out" / "bench.json"))["trusted_memory"]
    assert memory["count"] >= 5
    assert memory["last"] - memory["first"] < 64 << 20 and memory["max"] - memory["first"] < 96 << 20, memory
