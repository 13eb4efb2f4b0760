"""The evaluator's corpus, end to end: every candidate in tests/corpus/manifest.json is judged by
the real kforge binary on the CPU (Triton's interpreter) and must get exactly its expected verdict.
Candidates whose verdict only a GPU can show are left to bench/gpu_checks.sh."""
from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(REPO, "tests", "corpus")
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))


def _manifest() -> list[dict]:
    with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as handle:
        return json.load(handle)["candidates"]


CPU_ENTRIES = [e for e in _manifest() if not e.get("gpu_only")]


def _judge(entries: list[dict], workspace: str, environment: dict[str, str]) -> dict[tuple[str, str], dict]:
    """Runs kforge once per (task, mode) over all of that group's candidates."""
    if not os.access(BINARY, os.X_OK):
        pytest.fail(f"kforge binary not found at {BINARY}; build first (scripts/bootstrap)")
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for entry in entries:
        groups[(entry["task"], entry.get("mode", "strict"))].append(entry["path"])
    results: dict[tuple[str, str], dict] = {}
    for (task, mode), paths in groups.items():
        command = [BINARY, "--quiet", "--workspace", workspace, "--device", "cpu", "eval", "--json",
                   "--mode", mode, "--timeout", "30", "--memory-limit", "3",
                   os.path.join(REPO, task)] + [os.path.join(CORPUS, p) for p in paths]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, env={**os.environ, **environment})
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert len(lines) == len(paths), f"{command}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
        for path, result in zip(paths, lines):
            results[(path, mode)] = result
    return results


@pytest.fixture(scope="session")
def verdicts(tmp_path_factory) -> dict[tuple[str, str], dict]:
    return _judge(CPU_ENTRIES, str(tmp_path_factory.mktemp("workspace")), {})


# The timed calls' outputs are judged on a secret sample of their elements; with a tiny sample
# even the CPU sizes take that path, and the verdicts must not change.
SAMPLED_PATHS = ("honest_relu.py", "memo_data_ptr.py", "memo_sampled_values.py", "identity_copy_kernel.py",
                 "hardcoded_element_count.py", "honest_softmax_rowwise.py", "hardcoded_first_row_only.py",
                 "input_scratch_clobber.py", "result_drop_failing_calls_hidden.py",
                 "result_forged_description_hidden.py")


@pytest.mark.parametrize("entry", CPU_ENTRIES, ids=[f"{e['path']}[{e.get('mode', 'strict')}]" for e in CPU_ENTRIES])
def test_candidate_gets_its_expected_verdict(entry, verdicts):
    result = verdicts[(entry["path"], entry.get("mode", "strict"))]
    assert result["verdict"] == entry["expect"], (
        f"{entry['path']}: expected {entry['expect']} ({entry.get('why', '')}), got {result['verdict']}: "
        f"{result['message']}")
    assert result["message"], "every verdict carries a message a developer can act on"


def test_verdicts_hold_when_timed_outputs_are_sampled(tmp_path):
    entries = [e for e in CPU_ENTRIES if os.path.basename(e["path"]) in SAMPLED_PATHS]
    assert len(entries) == len(SAMPLED_PATHS)
    results = _judge(entries, str(tmp_path), {"KFORGE_OUTPUT_SAMPLE_COUNT": "64"})
    for entry in entries:
        result = results[(entry["path"], entry.get("mode", "strict"))]
        assert result["verdict"] == entry["expect"], f"{entry['path']}: got {result['verdict']}: {result['message']}"
        timed = result["evidence"].get("correctness", {}).get("timed", [])
        if result["verdict"] == "accepted":
            assert timed and all(report["outputs"][0].get("sampled_elements") == 64 for report in timed)


def test_corpus_covers_every_hack_class_twice():
    counts: dict[str, int] = defaultdict(int)
    for entry in _manifest():
        counts[entry["expect"]] += 1
    honest = counts.pop("accepted", 0)
    assert honest >= 12
    assert sum(counts.values()) >= 40


def test_every_evaluation_is_stored(verdicts):
    assert all(isinstance(result.get("id"), int) for result in verdicts.values())
