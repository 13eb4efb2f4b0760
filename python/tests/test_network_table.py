"""bench/network_table.py: a table of a bench run folder's reports, merged with an earlier table's
rows and a bench.json's rows for the tasks the folder lacks, and the level's summary line."""
from __future__ import annotations

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "network_table.py")


def report(candidate: float, eager: float, compiled: float) -> dict:
    timing = {"candidate_ms": {"median": candidate}, "reference_eager_ms": {"median": eager},
              "reference_compile_ms": {"median": compiled}}
    return {"evaluation": {"verdict": "accepted", "evidence": {"timing": timing, "provenance": {
        "kernels": [{"calls": 3, "time_us": 1500.0}]}}}, "compile": {"graph_replay": True}}


def test_run_folder_rows_then_bench_rows_then_the_base_table(tmp_path):
    run = tmp_path / "run"
    for name, timings in (("9_ResNet18", (1.0, 2.0, 4.0)), ("10_ResNet101", (2.0, 2.0, 3.0))):
        (run / name).mkdir(parents=True)
        (run / name / "report.json").write_text(json.dumps(report(*timings)))
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"tasks": [
        {"task": "level3/12_VGG19", "verdict": "accepted", "candidate_ms": 5.0, "eager_ms": 10.0, "compile_ms": 5.0},
        {"task": "level3/9_ResNet18", "verdict": "accepted", "candidate_ms": 9.0, "eager_ms": 1.0, "compile_ms": 1.0}]}))
    base = tmp_path / "base.json"
    base.write_text(json.dumps([
        {"task": "1_MLP", "verdict": "accepted", "graph_replay": True, "launches": 8, "kernels_ms": 2.0, "call_ms": 2.0,
         "eager_ms": 4.0, "compile_ms": 4.0, "vs_eager": 2.0, "vs_compile": 2.0, "run": "old"},
        {"task": "12_VGG19", "verdict": "wrong_output", "graph_replay": None, "launches": None, "kernels_ms": None,
         "call_ms": None, "eager_ms": None, "compile_ms": None, "vs_eager": None, "vs_compile": None}]))
    out = tmp_path / "table.json"
    printed = subprocess.run([sys.executable, SCRIPT, str(run), "--bench", str(bench), "--base", str(base), "--summary",
                              "--json", str(out)], check=True, capture_output=True, text=True).stdout
    rows = json.loads(out.read_text())
    assert [r["task"] for r in rows] == ["1_MLP", "9_ResNet18", "10_ResNet101", "12_VGG19"]
    by_task = {r["task"]: r for r in rows}
    assert by_task["9_ResNet18"]["vs_compile"] == 4.0 and by_task["9_ResNet18"]["launches"] == 3  # the report wins
    assert by_task["12_VGG19"]["verdict"] == "accepted" and by_task["12_VGG19"]["vs_eager"] == 2.0  # bench.json over base
    assert by_task["12_VGG19"]["run"] == str(bench) and by_task["1_MLP"]["run"] == "old"
    assert "tasks 4, accepted 4 (100%)" in printed
    assert "kforge vs torch.compile 1.86x" in printed  # (2 * 4 * 1.5 * 1) ** (1 / 4)


def test_repeated_base_tables_give_each_task_the_first_tables_row(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    def table(name, rows):
        path = tmp_path / name
        path.write_text(json.dumps([{"task": task, "verdict": "accepted", "graph_replay": None, "launches": None,
                                     "kernels_ms": None, "call_ms": call, "eager_ms": 4.0, "compile_ms": 4.0,
                                     "vs_eager": 4.0 / call, "vs_compile": 4.0 / call} for task, call in rows]))
        return str(path)
    newer = table("newer.json", [("5_AlexNet", 2.0)])
    older = table("older.json", [("5_AlexNet", 4.0), ("1_MLP", 1.0)])
    out = tmp_path / "table.json"
    subprocess.run([sys.executable, SCRIPT, str(run), "--base", newer, "--base", older, "--json", str(out)], check=True,
                   capture_output=True, text=True)
    rows = {r["task"]: r for r in json.loads(out.read_text())}
    assert rows["5_AlexNet"]["call_ms"] == 2.0 and rows["5_AlexNet"]["run"] == newer
    assert rows["1_MLP"]["run"] == older


def test_rows_of_several_gpus_are_named(tmp_path):
    run = tmp_path / "run"
    for name, gpu in (("28_VisionTransformer", "NVIDIA H100 80GB HBM3"), ("31_VisionAttention", "NVIDIA H200")):
        (run / name).mkdir(parents=True)
        (run / name / "report.json").write_text(json.dumps(dict(report(1.0, 2.0, 2.0), gpu=gpu)))
    out = tmp_path / "table.json"
    printed = subprocess.run([sys.executable, SCRIPT, str(run), "--json", str(out)], check=True, capture_output=True,
                             text=True).stdout
    assert "rows from several GPUs: NVIDIA H100 80GB HBM3: 28_VisionTransformer; NVIDIA H200: 31_VisionAttention" in printed
    assert {r["task"]: r["gpu"] for r in json.loads(out.read_text())} == {"28_VisionTransformer": "NVIDIA H100 80GB HBM3",
                                                                            "31_VisionAttention": "NVIDIA H200"}
    # One GPU: nothing said.
    (run / "31_VisionAttention" / "report.json").write_text(json.dumps(dict(report(1.0, 2.0, 2.0), gpu="NVIDIA H100 80GB HBM3")))
    printed = subprocess.run([sys.executable, SCRIPT, str(run)], check=True, capture_output=True, text=True).stdout
    assert "several GPUs" not in printed


def test_torch_compile_timed_from_the_cache_is_marked_and_close_rows_are_named(tmp_path):
    run = tmp_path / "run"
    cases = {"43_MinGPTCausalAttention": ((1.0, 2.0, 1.02), {"hits": 1, "misses": 0}),  # cached and close
             "5_AlexNet": ((1.0, 2.0, 1.02), {"hits": 0, "misses": 1}),                  # close, compiled fresh
             "9_ResNet18": ((1.0, 2.0, 3.0), {"hits": 2, "misses": 0}),                  # cached, far ahead
             "10_ResNet101": ((1.0, 2.0, 1.5), None)}                                     # an older report: unknown
    for name, (timings, graphs) in cases.items():
        (run / name).mkdir(parents=True)
        made = report(*timings)
        if graphs:
            made["evaluation"]["evidence"]["timing"]["reference_compile_cache"] = graphs
        (run / name / "report.json").write_text(json.dumps(made))
    out = tmp_path / "table.json"
    printed = subprocess.run([sys.executable, SCRIPT, str(run), "--json", str(out)], check=True, capture_output=True,
                             text=True).stdout
    assert {r["task"]: r["compile_cached"] for r in json.loads(out.read_text())} == {
        "5_AlexNet": False, "9_ResNet18": True, "10_ResNet101": None, "43_MinGPTCausalAttention": True}
    assert "| 3.000 ms (cached) |" in printed and "| 1.020 ms (cached) |" in printed
    assert printed.count("(cached)") == 2
    assert printed.strip().endswith("within 5% of kforge (time these again): 43_MinGPTCausalAttention")
