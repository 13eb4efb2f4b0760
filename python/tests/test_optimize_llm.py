"""`kforge optimize --llm` and `kforge resume`, end to end through the real binary on the CPU:
kernel writers fed by a hand-written cassette (or a command) repair their candidates from the
evaluator's verdicts; an interrupted stage resumes without asking again for recorded replies."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
CASSETTE = os.path.join(REPO, "tests", "agents", "data", "relu_writer.jsonl")
RELU = os.path.join(REPO, "tasks", "level1", "01_relu.py")


def kforge(tmp_path, *args: str) -> tuple[int, dict, str]:
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", *args],
                          capture_output=True, text=True, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-3000:]
    return done.returncode, json.loads(lines[-1]), done.stderr


def optimize_llm(tmp_path, spec: str, *extra: str) -> tuple[int, dict, str]:
    return kforge(tmp_path, "optimize", "--json", "--out", str(tmp_path / "out"), "--llm", spec, "--workers", "1",
                  *extra, RELU)


def verdicts(report: dict) -> list[str]:
    return [attempt["verdict"] for attempt in report["llm"]["pool"]["attempts"]]


def test_writer_repairs_a_compile_error_and_a_cheat_until_accepted(tmp_path):
    code, report, log = optimize_llm(tmp_path, f"replay:{CASSETTE}", "--rounds", "4")
    assert code == 0, log[-3000:]
    assert verdicts(report) == ["compile_error", "rejected_hack(memoization)", "accepted"]
    # On the CPU timings mean nothing: the compiler's accepted candidate stays.
    assert report["source"] == "compiler" and report["evaluation"]["verdict"] == "accepted"
    stage = tmp_path / "out" / "01_relu" / "llm"
    assert (stage / "stage.json").exists() and (stage / "summary.json").exists()
    second = (stage / "writer1" / "round2" / "prompt.md").read_text()
    assert "has no attribute 'relu'" in second  # the real compiler error went back to the model
    assert "writer 1 round 3: accepted" in log
    assert report["llm"]["usage"]["calls"] == 3
    # Every call is in the store under the stage's run, prompt and reply included.
    listed = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "show", "--llm", "--json", "--run",
                             report["llm"]["run_id"]], capture_output=True, text=True, timeout=60)
    calls = json.loads(listed.stdout)
    assert [c["status"] for c in calls] == ["ok", "ok", "ok"] and calls[0]["provider"] == "replay"
    one = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "show", "--llm", str(calls[-1]["id"])],
                         capture_output=True, text=True, timeout=60)
    assert "# Task: write ModelNew for level1/01_relu" in one.stdout and "== reply" in one.stdout
    # The dataset export: one line per round with its prompt, reply, candidate and verdict.
    exported = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--quiet", "export", "--only", "llm"],
                              capture_output=True, text=True, timeout=60)
    assert exported.returncode == 0, exported.stderr
    rounds = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [r["verdict"] for r in rounds] == ["compile_error", "rejected_hack(memoization)", "accepted"]
    assert rounds[1]["prompt"] == second and rounds[2]["reply"] == (stage / "writer1" / "round3" / "reply.md").read_text()
    assert rounds[2]["candidate"] == (stage / "writer1" / "round3" / "candidate.py").read_text()
    assert rounds[2]["evaluation_id"] is not None and rounds[0]["run_id"] == report["llm"]["run_id"]
    assert rounds[0]["task_source"] == open(RELU).read() and rounds[0]["prompt_kind"] == "write"


def test_command_provider_writes_the_kernel(tmp_path):
    reply = tmp_path / "reply.md"
    honest = open(os.path.join(REPO, "tests", "corpus", "candidates", "l1_01_relu", "honest_relu.py")).read()
    reply.write_text("A single pass over memory:\n\n```python\n" + honest + "```\n")
    code, report, log = optimize_llm(tmp_path, f"command:cat {reply}", "--rounds", "2")
    assert code == 0, log[-3000:]
    assert verdicts(report) == ["accepted"]
    assert report["llm"]["pool"]["best"]["writer"] == 1


def test_two_evaluators_judge_two_writers_candidates_at_once(tmp_path):
    reply = tmp_path / "reply.md"
    honest = open(os.path.join(REPO, "tests", "corpus", "candidates", "l1_01_relu", "honest_relu.py")).read()
    reply.write_text("```python\n" + honest + "```\n")
    code, report, log = kforge(tmp_path, "optimize", "--json", "--out", str(tmp_path / "out"), "--llm",
                               f"command:cat {reply}", "--workers", "2", "--rounds", "1", "--evaluators", "2",
                               "--budget-gpu", "10m", RELU)
    assert code == 0, log[-3000:]
    assert "2 evaluation(s) at once" in log
    assert verdicts(report) == ["accepted", "accepted"]
    evaluators = report["llm"]["evaluators"]
    # Each evaluation starts its own worker set and takes seconds: the two writers' candidates overlapped.
    assert evaluators["slots"] == 2 and evaluators["peak_at_once"] == 2, evaluators
    assert evaluators["device_seconds"] > 0
    assert report["llm"]["settings"]["evaluators"] == 2 and report["llm"]["settings"]["budget_gpu_s"] == 600


def test_a_spent_device_time_budget_stops_the_writers(tmp_path):
    code, report, log = optimize_llm(tmp_path, f"replay:{CASSETTE}", "--rounds", "4", "--budget-gpu", "1s")
    assert code == 0, log[-3000:]
    # The cassette's third round would be accepted; a candidate that runs takes more than a second on
    # the CPU, so the budget is spent before it (after the first or the second round).
    assert verdicts(report) in (["compile_error"], ["compile_error", "rejected_hack(memoization)"])
    assert report["llm"]["evaluators"]["device_seconds"] >= 1
    assert "device-time budget of 1 s of evaluations is spent" in report["llm"]["stop_reason"], report["llm"]


def test_interrupted_stage_resumes_without_asking_again(tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    lines = open(CASSETTE).read().splitlines(keepends=True)
    cassette.write_text(lines[0])  # only the first reply: the second round finds no recording
    code, report, log = optimize_llm(tmp_path, f"replay:{cassette}", "--rounds", "4")
    assert verdicts(report) == ["compile_error", "no_recording"]
    assert "no_recording" in report["llm"]["stop_reason"] or "recording" in report["llm"]["stop_reason"]

    cassette.write_text("".join(lines[1:]))  # the first reply is no longer there to replay
    code, report, log = kforge(tmp_path, "resume", "--json", str(tmp_path / "out" / "01_relu"))
    assert code == 0, log[-3000:]
    attempts = report["llm"]["pool"]["attempts"]
    assert [a["verdict"] for a in attempts] == ["compile_error", "rejected_hack(memoization)", "accepted"]
    assert [a["reused_reply"] for a in attempts] == [True, False, False]
    assert report["llm"]["usage"]["calls"] == 2


def test_bad_provider_spec_is_a_usage_error(tmp_path):
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "optimize", "--out",
                           str(tmp_path / "out"), "--llm", "nosuch:model", RELU], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 2
    assert "nosuch" in done.stderr and "openai" in done.stderr


def test_resume_without_a_stage_is_a_usage_error(tmp_path):
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "resume", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no LLM stage" in done.stderr
    shutil.rmtree(tmp_path / "ws", ignore_errors=True)


SOFTMAX_TASK = '''import torch
import torch.nn as nn

batch_size = 4096
dim = 8192
KFORGE_CPU_SIZES = {"batch_size": 8, "dim": 64}


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def test_described_task_is_written_loaded_and_optimized(tmp_path):
    honest = open(os.path.join(REPO, "tests", "corpus", "candidates", "l1_03_softmax",
                               "honest_softmax_rowwise.py")).read()
    cassette = tmp_path / "cassette.jsonl"
    entries = [
        # The first version forgets get_init_inputs: the model is told and tries again.
        {"match": ["write the reference program"],
         "reply": "```python\n" + SOFTMAX_TASK.split("def get_init_inputs")[0] + "```\n"},
        {"match": ["write the reference program", "does not define"], "reply": "```python\n" + SOFTMAX_TASK + "```\n"},
        {"match": ["# Task: write ModelNew"], "reply": "A row per program:\n\n```python\n" + honest + "```\n"},
    ]
    cassette.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    code, report, log = kforge(tmp_path, "optimize", "--json", "--out", str(tmp_path / "out"), "--describe",
                               "Row-wise softmax over 4096x8192 fp32", "--llm", f"replay:{cassette}",
                               "--workers", "1", "--rounds", "1")
    assert code == 0, log[-3000:]
    written = tmp_path / "out" / "row_wise_softmax_over_4096x8192_fp32.py"
    assert written.read_text() == SOFTMAX_TASK
    assert "read it" in log
    assert verdicts(report) == ["accepted"]


def test_describe_needs_a_model(tmp_path):
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "optimize", "--describe",
                           "softmax"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--describe needs --llm" in done.stderr


MATMUL_SOFTMAX = os.path.join(REPO, "python", "tests", "tasks", "matmul_softmax.py")


def part_replies() -> list[dict]:
    """Replies that read like a model's, one per fusion group of matmul_softmax: the matmul part
    and the softmax part each get a program written for that group alone."""
    candidates = os.path.join(REPO, "tests", "corpus", "candidates")
    matmul = open(os.path.join(candidates, "l1_02_matmul", "honest_matmul_ieee.py")).read()
    softmax = open(os.path.join(candidates, "l1_03_softmax", "honest_softmax_rowwise.py")).read()
    return [
        {"match": ["# Task: write ModelNew", "aten.mm.default"],
         "reply": "A tiled matmul with tl.dot:\n\n```python\n" + matmul + "```\n"},
        {"match": ["# Task: write ModelNew", "aten.amax.default"],
         "reply": "One program per row:\n\n```python\n" + softmax + "```\n"},
    ]


def test_decomposition_verifies_each_part_then_the_composition(tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    cassette.write_text("".join(json.dumps(entry) + "\n" for entry in part_replies()))
    code, report, log = kforge(tmp_path, "optimize", "--json", "--out", str(tmp_path / "out"), "--llm",
                               f"replay:{cassette}", "--workers", "1", "--rounds", "1", "--route", "decompose",
                               MATMUL_SOFTMAX)
    assert code == 0, log[-3000:]
    decomposition = report["llm"]["decomposition"]
    assert [part["accepted"] for part in decomposition["parts"]] == [True, True]
    assert decomposition["composed"]["evaluation"]["verdict"] == "accepted"
    composed = open(decomposition["composed"]["path"]).read()
    # Both verified programs live in one file under their own names, called in the groups' places.
    assert "class kf_part0_ModelNew" in composed and "class kf_part1_ModelNew" in composed
    assert "self.kf_mm = kf_part0_ModelNew()" in composed


def test_router_falls_back_to_decomposition_when_the_whole_program_fails(tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    # The whole-program writer gets a reply without code; the parts get theirs.
    whole = {"match": ["# Task: write ModelNew", "torch.softmax(a @ b"], "reply": "I would fuse them."}
    cassette.write_text("".join(json.dumps(entry) + "\n" for entry in [whole] + part_replies()))
    code, report, log = kforge(tmp_path, "optimize", "--json", "--out", str(tmp_path / "out"), "--llm",
                               f"replay:{cassette}", "--workers", "1", "--rounds", "1", MATMUL_SOFTMAX)
    assert code == 0, log[-3000:]
    assert report["llm"]["routes"] == ["whole_program", "decomposition"]
    assert verdicts(report) == ["no_code_block"]
    assert report["llm"]["decomposition"]["composed"]["evaluation"]["verdict"] == "accepted"


def test_empty_reply_and_wrong_output_are_fed_back_until_a_fix(tmp_path):
    honest = open(os.path.join(REPO, "tests", "corpus", "candidates", "l1_03_softmax",
                               "honest_softmax_rowwise.py")).read()
    # The classic slip: exponentials written out, never normalized by their sum.
    wrong = honest.replace("numerator / denominator", "numerator")
    assert wrong != honest
    entries = [
        {"match": ["# Task: write ModelNew for level1/03_softmax"], "reply": ""},
        {"match": ["# Task: repair ModelNew", "reply was empty"],
         "reply": "Sorry. Here is a row-wise softmax:\n\n```python\n" + wrong + "```\n"},
        {"match": ["# Task: repair ModelNew", "wrong_output"],
         "reply": "The rows must be divided by their sum; fixed:\n\n```python\n" + honest + "```\n"},
    ]
    cassette = tmp_path / "cassette.jsonl"
    cassette.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    code, report, log = kforge(tmp_path, "optimize", "--json", "--out", str(tmp_path / "out"), "--llm",
                               f"replay:{cassette}", "--workers", "1", "--rounds", "3",
                               os.path.join(REPO, "tasks", "level1", "03_softmax.py"))
    assert code == 0, log[-3000:]
    assert verdicts(report) == ["empty_reply", "wrong_output", "accepted"]
    third = (tmp_path / "out" / "03_softmax" / "llm" / "writer1" / "round3" / "prompt.md").read_text()
    assert "max abs" in third or "error" in third  # the evaluator's numbers went back to the model


def test_search_settings_out_of_range_are_refused_before_any_work(tmp_path):
    for flag, value, words in (("--patience", "0", "--patience must be at least 1"),
                               ("--min-gain", "1.5", "--min-gain must be at least 0 and below 1"),
                               ("--workers", "0", "--workers and --rounds must be at least 1"),
                               ("--strategy", "random", "--strategy must be greedy, beam or evolve, not 'random'"),
                               ("--llm-for", "planner=openai:o3", "no role 'planner'"),
                               ("--llm-for", "optimize", "--llm-for takes ROLE=SPEC"),
                               ("--beam-width", "0", "--beam-width must be at least 1"),
                               ("--evaluators", "-1", "--evaluators must be from 1 to 16 (0: one per GPU)"),
                               ("--budget-gpu", "soon", "--budget-gpu:")):
        done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "optimize", "--out",
                               str(tmp_path / "out"), "--llm", f"replay:{CASSETTE}", flag, value, RELU],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and words in done.stderr, done.stderr[-1000:]
        assert "compiling" not in done.stderr  # refused before the compiler ran
