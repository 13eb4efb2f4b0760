"""The hand-written replies bench/strategies.sh replays on the GPU (bench/strategy_cassette.py):
each writer's first program is found by its approach hint, and the programs are what they claim
(correct, except the one written wrong on purpose), checked on the CPU on rows with a masked tail."""
from __future__ import annotations

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
sys.path.insert(0, os.path.join(REPO, "bench"))

import strategy_cassette  # noqa: E402

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 393216
KFORGE_CPU_SIZES = {"batch_size": 6, "dim": 100}


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
'''


def test_every_entry_names_a_program_of_the_set_and_the_first_programs_are_judged_as_written(tmp_path):
    entries = strategy_cassette.entries(small=True)
    programs = strategy_cassette.programs(small=True)
    for entry in entries:
        assert entry["match"] and entry["match"][0].startswith("# Task")
        if "```python" in entry["reply"]:
            program = entry["reply"].split("```python\n", 1)[1].split("```", 1)[0]
            assert program in programs.values()
    cassette = tmp_path / "cassette.jsonl"
    subprocess.run([sys.executable, os.path.join(REPO, "bench", "strategy_cassette.py"), "--out", str(cassette),
                    "--small"], check=True)
    task = tmp_path / "23_Softmax.py"
    task.write_text(TASK)
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "optimize", "--json",
                           "--out", str(tmp_path / "out"), "--llm", f"replay:{cassette}", "--route", "whole",
                           "--strategy", "evolve", "--workers", "4", "--rounds", "1", str(task)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    attempts = report["llm"]["pool"]["attempts"]
    # Rows of 100 columns in blocks of 32: a masked tail. The tiled program normalizes by its
    # first tile only, and the evaluator says so.
    verdicts = sorted(attempt["verdict"] for attempt in attempts)
    assert verdicts[:3] == ["accepted"] * 3 and verdicts[3].startswith("wrong_output"), verdicts
