"""Hardware counters of a candidate's kernels, read with Nsight Compute, and what bounds each one.

After a candidate passed every check on a GPU, its forward runs once more in a child process
under `ncu` (with the GPU's own clocks: `--clock-control none`), inside the same sandbox as the
candidate, on inputs of the same shapes. For every kernel it launches, ncu reports achieved DRAM
and SM throughput, occupancy, registers, local-memory (spill) traffic and the warp stall reasons;
`classify` turns them into a bottleneck (memory, compute or latency) and the words that say why.

The numbers come from the candidate's own process, so they are advice for the next attempt and
never evidence for a verdict. Where ncu is missing or refused, the evaluation goes on without them
and says why.
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

import torch

TIME = "gpu__time_duration.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
ACHIEVED_OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
REGISTERS = "launch__registers_per_thread"
GRID = "launch__grid_size"
BLOCK = "launch__block_size"
WAVES = "launch__waves_per_multiprocessor"
LOCAL_LOAD = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"
LOCAL_STORE = "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"
DRAM_BYTES = "dram__bytes.sum"
TENSOR_PCT = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"

METRICS = ",".join([TIME, DRAM_PCT, SM_PCT, ACHIEVED_OCCUPANCY, THEORETICAL_OCCUPANCY, REGISTERS, GRID, BLOCK,
                    WAVES, LOCAL_LOAD, LOCAL_STORE, DRAM_BYTES, TENSOR_PCT,
                    r"regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"])

# What a stall reason means, in words a kernel writer acts on. "selected" is a warp issuing: no stall.
STALL_WORDS = {
    "long_scoreboard": "waiting on global or local memory loads (L1TEX)",
    "short_scoreboard": "waiting on shared memory or special-function results (MIO)",
    "mio_throttle": "the shared-memory instruction queue is full",
    "lg_throttle": "the global-memory instruction queue is full (many small loads or stores)",
    "barrier": "waiting at a block-wide barrier",
    "membar": "waiting on a memory fence",
    "math_pipe_throttle": "an arithmetic pipe is busy (compute)",
    "wait": "fixed-latency dependencies between instructions",
    "not_selected": "ready but another warp was picked (enough parallelism)",
    "gmma": "waiting on warpgroup matrix instructions (wgmma)",
    "drain": "waiting for stores to drain at exit",
    "dispatch_stall": "the dispatcher stalled",
    "no_instruction": "instruction cache misses",
    "branch_resolving": "resolving branch targets",
    "imc_miss": "immediate-constant cache misses",
    "tex_throttle": "the texture queue is full",
    "sleeping": "sleeping",
    "misc": "miscellaneous hardware reasons",
}

MEMORY_BOUND_PCT = 60.0
COMPUTE_BOUND_PCT = 60.0
PROFILED_LAUNCHES = 200


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in ("/usr/local/cuda/bin/ncu",):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def _number(text: str) -> float | None:
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return None


def parse_raw_csv(text: str) -> list[dict[str, Any]]:
    """The kernels of `ncu --csv --page raw` output, in launch order: name, the metrics above as
    numbers, and the stall reasons as {reason: warps per issue cycle}. Lines before the header
    (the tool's own messages, the program's output) are skipped; a units row is recognised."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID","Process ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = rows[0]
    kernels = []
    for row in rows[1:]:
        if len(row) != len(header):
            continue
        fields = dict(zip(header, row))
        if not fields.get("ID", "").strip().isdigit():
            continue  # the units row
        metrics = {key: _number(value) for key, value in fields.items() if "__" in key}
        stalls = {key[len(STALL_PREFIX):-len(STALL_SUFFIX)]: value for key, value in metrics.items()
                  if key.startswith(STALL_PREFIX) and key.endswith(STALL_SUFFIX) and value is not None}
        kernels.append({
            "name": fields.get("Kernel Name", "?"),
            "time_us": (metrics.get(TIME) or 0.0) / 1000.0,
            "dram_pct": metrics.get(DRAM_PCT),
            "sm_pct": metrics.get(SM_PCT),
            "tensor_pct": metrics.get(TENSOR_PCT),
            "achieved_occupancy_pct": metrics.get(ACHIEVED_OCCUPANCY),
            "theoretical_occupancy_pct": metrics.get(THEORETICAL_OCCUPANCY),
            "registers_per_thread": metrics.get(REGISTERS),
            "grid_size": metrics.get(GRID),
            "block_size": metrics.get(BLOCK),
            "waves_per_sm": metrics.get(WAVES),
            "dram_bytes": metrics.get(DRAM_BYTES),
            "local_bytes": (metrics.get(LOCAL_LOAD) or 0.0) + (metrics.get(LOCAL_STORE) or 0.0),
            "stalls": stalls,
        })
    return kernels


def top_stalls(stalls: dict[str, float], count: int = 3) -> list[dict[str, Any]]:
    """The largest stall reasons, each with its share of all stalled warps."""
    stalled = {reason: value for reason, value in stalls.items() if reason != "selected" and value > 0}
    total = sum(stalled.values())
    ranked = sorted(stalled.items(), key=lambda item: -item[1])[:count]
    return [{"reason": reason, "share": value / total, "words": STALL_WORDS.get(reason, reason)}
            for reason, value in ranked] if total else []


def classify(kernel: dict[str, Any]) -> dict[str, Any]:
    """What bounds one kernel: "memory" (DRAM busy), "compute" (SM pipes busy) or "latency"
    (neither: the warps wait), with the facts behind it in words."""
    dram, sm = kernel.get("dram_pct") or 0.0, kernel.get("sm_pct") or 0.0
    stalls = top_stalls(kernel.get("stalls") or {})
    facts = [f"DRAM throughput {dram:.0f}% of peak, SM throughput {sm:.0f}% of peak"]
    if dram >= MEMORY_BOUND_PCT and dram >= sm:
        bound = "memory"
    elif sm >= COMPUTE_BOUND_PCT:
        bound = "compute"
        if kernel.get("tensor_pct") is not None:
            facts.append(f"tensor-core pipe active {kernel['tensor_pct']:.0f}% of the time")
    else:
        bound = "latency"
    achieved, theoretical = kernel.get("achieved_occupancy_pct"), kernel.get("theoretical_occupancy_pct")
    if achieved is not None and theoretical is not None:
        facts.append(f"occupancy {achieved:.0f}% achieved of {theoretical:.0f}% possible"
                     f" ({kernel.get('registers_per_thread') or 0:.0f} registers per thread)")
    waves = kernel.get("waves_per_sm")
    if waves is not None and waves < 1:
        facts.append(f"the grid fills {waves:.2f} of one wave of the GPU's SMs (too few blocks)")
    if kernel.get("local_bytes"):
        facts.append(f"register spills: {kernel['local_bytes'] / 1024:.0f} KiB of local-memory traffic")
    if stalls:
        facts.append("warps stall mostly on " + "; ".join(
            f"{s['reason']} ({s['share']:.0%}: {s['words']})" for s in stalls))
    return {"bound": bound, "facts": facts, "top_stalls": stalls}


def summarize(kernels: list[dict[str, Any]], authored: set[str]) -> dict[str, Any]:
    """Kernels of one forward with their bottleneck, the candidate's own first, slowest first."""
    from .provenance import classify_kernel
    out = []
    for kernel in kernels:
        entry = dict(kernel)
        entry["class"] = classify_kernel(kernel["name"], authored)
        entry.update(classify(kernel))
        out.append(entry)
    out.sort(key=lambda k: (k["class"] != "authored", -k["time_us"]))
    return {"tool": "ncu", "kernels": out, "launches": len(kernels)}


# -- the child process ncu launches ------------------------------------------------------------

def _describe(values: list[Any], folder: str, name: str, keep_bytes: int) -> list[Any]:
    """`values` as the child rebuilds them: tensors up to `keep_bytes` in all are saved; larger
    floating tensors are drawn again with their shape (the profile is about speed, not values)."""
    described, kept = [], 0
    for index, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            size = value.numel() * value.element_size()
            if kept + size <= keep_bytes or not value.is_floating_point():
                path = os.path.join(folder, f"{name}{index}.pt")
                torch.save(value.detach().to("cpu"), path)
                described.append({"saved": path})
                kept += size
            else:
                described.append({"drawn": list(value.shape), "dtype": str(value.dtype).replace("torch.", "")})
        else:
            described.append({"value": value})
    return described


def _rebuild(described: list[dict[str, Any]], device: torch.device) -> list[Any]:
    values = []
    for item in described:
        if "saved" in item:
            values.append(torch.load(item["saved"], weights_only=True).to(device))
        elif "drawn" in item:
            values.append(torch.randn(item["drawn"], dtype=getattr(torch, item["dtype"]), device=device))
        else:
            values.append(item["value"])
    return values


def measure(candidate_path: str, init_path: str, inputs: list[Any], model: torch.nn.Module, folder: str,
            authored: set[str], timeout_s: float, keep_bytes: int = 1 << 30) -> dict[str, Any]:
    """Runs the candidate's forward under ncu in a child process; the summary, or {"skipped": why}."""
    ncu = find_ncu()
    if ncu is None:
        return {"skipped": "Nsight Compute (ncu) is not installed here"}
    started = time.perf_counter()
    state_path = os.path.join(folder, "kernel_profile_state.pt")
    state = {k: v.detach().to("cpu") for k, v in model.state_dict().items()}
    state_bytes = sum(v.numel() * v.element_size() for v in state.values())
    if state_bytes <= keep_bytes:
        torch.save(state, state_path)
    else:
        state_path = ""
    del state
    spec = {"candidate": candidate_path, "init": init_path, "state": state_path,
            "inputs": _describe(inputs, folder, "kernel_profile_input", keep_bytes),
            "matmul_tf32": torch.backends.cuda.matmul.allow_tf32}
    spec_path = os.path.join(folder, "kernel_profile.json")
    with open(spec_path, "w", encoding="utf-8") as handle:
        json.dump(spec, handle)
    log_path = os.path.join(folder, "kernel_profile.csv")
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, HOME=folder, PYTHONPATH=package_root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--launch-count", str(PROFILED_LAUNCHES),
               "--csv", "--page", "raw", "--metrics", METRICS, "--log-file", log_path,
               sys.executable, "-m", "kforge_worker.kernel_profile", spec_path]
    from . import audit
    denial = audit.installed()
    if denial is not None:
        denial.sanction(command)
    try:
        done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"skipped": f"profiling under ncu took longer than {timeout_s:.0f} s"}
    except OSError as error:
        return {"skipped": f"ncu could not start: {error}"}
    finally:
        if denial is not None:
            denial.sanction(None)
    text = open(log_path, encoding="utf-8", errors="replace").read() if os.path.exists(log_path) else ""
    kernels = parse_raw_csv(text)
    if not kernels:
        why = [line for line in (text + done.stderr).splitlines() if "ERR" in line or "rror" in line]
        return {"skipped": "ncu measured no kernel" + (": " + " | ".join(why[:3])[:500] if why else
                                                       f" (exit status {done.returncode})")}
    summary = summarize(kernels, authored)
    summary["seconds"] = time.perf_counter() - started
    summary["inputs_drawn"] = any("drawn" in item for item in spec["inputs"])
    summary["weights"] = "the evaluated weights" if state_path else "the model's own initialisation (too large to copy)"
    return summary


def _target(spec_path: str) -> None:
    from . import audit, runtime_warmup
    from .task_loader import import_file
    spec = json.load(open(spec_path, encoding="utf-8"))
    runtime_warmup.after_cuda("cuda")  # CUDA, NVML and Triton's driver set up by kforge, as in a spare child
    audit.install(os.path.dirname(spec_path), [spec["candidate"]])  # the candidate's hooks, here too
    torch.backends.cuda.matmul.allow_tf32 = bool(spec.get("matmul_tf32"))
    torch.backends.cudnn.allow_tf32 = bool(spec.get("matmul_tf32"))
    device = torch.device("cuda")
    module = import_file(spec["candidate"], "kforge_candidate")
    init = torch.load(spec["init"], weights_only=False)
    torch.manual_seed(0)
    model = module.ModelNew(*init)
    if spec["state"]:
        model.load_state_dict(torch.load(spec["state"], weights_only=True), strict=True)
    model = model.to(device)
    inputs = _rebuild(spec["inputs"], device)
    with torch.no_grad():
        for _ in range(2):  # compile, autotune and warm caches outside the profiled range
            model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == "__main__":
    _target(sys.argv[1])
