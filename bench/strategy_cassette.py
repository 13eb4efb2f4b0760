#!/usr/bin/env python3
"""Writes the cassette that bench/strategies.sh replays: hand-written replies, as a model might
give them, for KernelBench's level1/23_Softmax, served by what each prompt asks for (its kind,
the writer's approach hint, the program it builds on). The programs are ours
(bench/strategy_replies/*.py, filled in here); no model wrote them and no model is measured. What
the replay measures is the search machinery: how many calls and evaluations each strategy
spends, the device time, and where each strategy's path through these replies ends, with every
candidate judged for real by the evaluator.

  python3 bench/strategy_cassette.py --out CASSETTE [--programs DIR] [--small]

--programs DIR also writes each program as DIR/<name>.py; --small uses blocks of 32 columns (the
CPU check in python/tests/test_strategy_cassette.py runs them on small rows)."""
from __future__ import annotations

import argparse
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
REPLIES = os.path.join(HERE, "strategy_replies")

APPROACH = {  # a phrase of each approach hint (prompts/approaches/), so each writer gets its own first program
    "direct": "the most direct correct kernel",
    "fused": "the fewest passes over global memory",
    "tiled": "think about tiles and layout",
    "autotuned": "a small autotuning space",
}
WRITE = "# Task: write ModelNew"
REPAIR = "# Task: repair ModelNew"
SPEEDUP = "# Task: make ModelNew faster"
RECOMBINE = "# Task: combine two accepted versions"
STREAMING = ', eviction_policy="evict_first"'


def config_list(pairs: list[tuple[int, int]]) -> str:
    return ", ".join(f"triton.Config({{'BLOCK': {block}}}, num_warps={warps})" for block, warps in pairs)


MODULE = """# {title}
import torch
import torch.nn as nn
import triton
import triton.language as tl


{kernel}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        {name}[(rows,)](x, out, cols, x.stride(0){launch})
        return out
"""


def program(title: str, kernel: str, block: int | None = None, warps: int | None = None,
            autotune: list[tuple[int, int]] | None = None, **hints: str) -> str:
    """A complete module: the kernel of bench/strategy_replies/<kernel>.py and a ModelNew that
    launches it one program per row, with BLOCK and num_warps given or autotuned."""
    text = open(os.path.join(REPLIES, kernel + ".py")).read()
    decorators = ""
    if autotune:
        decorators = f"@triton.autotune(\n    configs=[{config_list(autotune)}],\n    key=[\"n_cols\"],\n)\n"
    text = text.replace("{DECORATORS}", decorators)
    for key in ("FIRST_LOAD_HINT", "SECOND_LOAD_HINT", "STORE_HINT"):
        text = text.replace("{" + key + "}", hints.get(key, ""))
    assert not re.search(r"\{[A-Z_]+\}", text), text  # every placeholder filled
    name = text.split("def ", 1)[1].split("(", 1)[0]
    launch = "" if autotune else f", BLOCK={block}, num_warps={warps}"
    return MODULE.format(title=title, kernel=text.rstrip("\n") + "\n", name=name, launch=launch)


def programs(small: bool) -> dict[str, str]:
    def block(n: int) -> int:
        return 32 if small else n

    return {
        "three_v1": program("three-pass softmax v1", "three_pass", block(4096), 8),
        "online_v1": program("online softmax v1", "online", block(4096), 8),
        "tiled_v0": program("tiled softmax v0", "partial_sum_wrong", block(4096), 8),
        "three_v2": program("three-pass softmax v2 (tiled, repaired)", "three_pass", block(8192), 16),
        "auto_v1": program("online softmax autotuned v1", "online", autotune=[(block(2048), 4), (block(4096), 8)]),
        "online_from_three_v1": program("online softmax v2 (from three-pass v1)", "online", block(8192), 16),
        "online_from_three_v2": program("online softmax v2b (from three-pass v2)", "online", block(4096), 16),
        "online_v3": program("online softmax v3 (streaming hints)", "online", block(8192), 16,
                             SECOND_LOAD_HINT=STREAMING, STORE_HINT=STREAMING),
        "auto_v2": program("online softmax autotuned v2", "online",
                           autotune=[(block(2048), 4), (block(4096), 8), (block(8192), 16), (block(16384), 16)]),
        "recombined": program("online softmax autotuned recombined", "online",
                              autotune=[(block(4096), 8), (block(8192), 16)],
                              SECOND_LOAD_HINT=STREAMING, STORE_HINT=STREAMING),
    }


def reply(prose: str, program: str) -> str:
    return prose + "\n\n```python\n" + program.rstrip("\n") + "\n```\n"


def entries(small: bool) -> list[dict]:
    p = programs(small)
    marker = {name: source.splitlines()[0] + "\n" for name, source in p.items()}  # "# online softmax v1\n"
    out = [
        {"match": [WRITE, APPROACH["direct"]], "reply": reply(
            "A row of 393216 floats does not fit in one block, so each program loops over its row three times: "
            "the max, the sum of exponentials, then the output.", p["three_v1"])},
        {"match": [WRITE, APPROACH["fused"]], "reply": reply(
            "Online softmax: one pass keeps a running max and a rescaled sum per lane, a second writes the output, "
            "so the row is read twice.", p["online_v1"])},
        {"match": [WRITE, APPROACH["tiled"]], "reply": reply(
            "Tiles of 4096 columns, one program per row; the normalizer comes from the first tile.", p["tiled_v0"])},
        {"match": [WRITE, APPROACH["autotuned"]], "reply": reply(
            "Online softmax with the block size and warps autotuned on the row length.", p["auto_v1"])},
        {"match": [REPAIR, marker["tiled_v0"]], "reply": reply(
            "The normalizer must cover the whole row, not its first tile: three passes over the row, with wider "
            "blocks.", p["three_v2"])},
    ]
    speedups = [
        ("three_v1", "online_from_three_v1", "Three reads of the row are one too many: an online max and sum in "
                                             "one pass, then the output."),
        ("three_v2", "online_from_three_v2", "Fold the max and the sum into one online pass: two reads instead of three."),
        ("online_v1", "online_v3", "Wider blocks and 16 warps for more loads in flight, and the second pass's data "
                                   "marked evict-first, since it is not read again."),
        ("auto_v1", "auto_v2", "A wider autotuning space, up to blocks of 16384 with 16 warps."),
    ]
    for _ in range(2):  # a writer may ask twice from the same program (its try was not faster)
        for parent, child, prose in speedups:
            out.append({"match": [SPEEDUP, marker[parent]], "reply": reply(prose, p[child])})
    for _ in range(8):
        out.append({"match": [RECOMBINE], "reply": reply(
            "Version A's online pass with version B's autotuning, and the output pass streamed (evict-first).",
            p["recombined"])})
    # Whatever else is asked: no program (the writer is told, and the round counts as failed).
    for _ in range(64):
        out.append({"match": ["# Task"], "reply": "I do not see a way to make this faster than what you have."})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--programs", help="also write each program to this folder")
    parser.add_argument("--small", action="store_true", help="blocks of 32 columns, for checks on small rows")
    args = parser.parse_args()
    with open(args.out, "w") as cassette:
        for entry in entries(args.small):
            cassette.write(json.dumps(entry) + "\n")
    if args.programs:
        os.makedirs(args.programs, exist_ok=True)
        for name, source in programs(args.small).items():
            with open(os.path.join(args.programs, name + ".py"), "w") as f:
                f.write(source)


if __name__ == "__main__":
    main()
