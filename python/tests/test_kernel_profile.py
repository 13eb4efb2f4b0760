"""Hardware counters read with Nsight Compute: parsing ncu's raw CSV (a real one, from the H200
the project is measured on: a Triton element-wise kernel and cuBLAS's SGEMM, one forward each),
the bottleneck each kernel is given, and the one command line the candidate's hooks let kforge
start for it."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from kforge_worker import kernel_profile

DATA = os.path.join(os.path.dirname(__file__), "data", "ncu_raw_h200.csv")


def kernels():
    with open(DATA, encoding="utf-8") as handle:
        return kernel_profile.parse_raw_csv(handle.read())


def test_the_raw_page_gives_each_kernel_its_metrics_past_the_tools_own_lines():
    found = kernels()
    assert [k["name"] for k in found] == ["scale_kernel", "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)"]
    scale, sgemm = found
    assert abs(scale["time_us"] - 30.784) < 1e-9
    assert scale["dram_pct"] == 74.27 and scale["sm_pct"] == 6.78
    assert scale["registers_per_thread"] == 18 and scale["grid_size"] == 16384 and scale["block_size"] == 128
    assert scale["dram_bytes"] == 109901824  # thousands separators are read
    assert scale["local_bytes"] == 0
    assert scale["stalls"]["long_scoreboard"] == 154.37
    assert sgemm["registers_per_thread"] == 202 and sgemm["waves_per_sm"] == 0.97


def test_a_streaming_kernel_is_memory_bound_and_an_sgemm_compute_bound():
    scale, sgemm = (kernel_profile.classify(k) for k in kernels())
    assert scale["bound"] == "memory"
    assert scale["top_stalls"][0]["reason"] == "long_scoreboard"
    assert scale["top_stalls"][0]["share"] > 0.8
    assert any("occupancy 83% achieved of 100% possible" in fact for fact in scale["facts"])
    assert sgemm["bound"] == "compute"
    assert any("0.97 of one wave" in fact for fact in sgemm["facts"])
    assert all(s["reason"] != "selected" for s in sgemm["top_stalls"])  # issuing is not a stall


def test_neither_pipe_busy_is_latency_and_spills_are_named():
    kernel = {"dram_pct": 12.0, "sm_pct": 20.0, "local_bytes": 4096.0, "stalls": {"barrier": 3.0, "wait": 1.0}}
    verdict = kernel_profile.classify(kernel)
    assert verdict["bound"] == "latency"
    assert any("register spills: 4 KiB" in fact for fact in verdict["facts"])
    assert verdict["top_stalls"][0]["reason"] == "barrier" and verdict["top_stalls"][0]["share"] == 0.75


def test_the_candidates_own_kernels_come_first():
    summary = kernel_profile.summarize(kernels(), {"scale_kernel"})
    assert summary["tool"] == "ncu" and summary["launches"] == 2
    assert [k["class"] for k in summary["kernels"]] == ["authored", "library_compute"]


def test_output_without_a_report_gives_no_kernels():
    assert kernel_profile.parse_raw_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n") == []


def test_the_hooks_let_kforge_start_exactly_the_sanctioned_command_and_nothing_else(tmp_path):
    script = textwrap.dedent(f"""
        import subprocess, sys
        from kforge_worker import audit
        denial = audit.install({str(tmp_path / "private")!r}, [])
        allowed = [sys.executable, "-c", "print('ran')"]
        denial.sanction(allowed)
        print(subprocess.run(allowed, capture_output=True, text=True).stdout.strip())
        try:
            subprocess.run([sys.executable, "-c", "print('other')"])
            print("other ran")
        except PermissionError:
            print("other refused")
        denial.sanction(None)
        try:
            subprocess.run(allowed)
            print("ran again")
        except PermissionError:
            print("refused once withdrawn")
    """)
    (tmp_path / "private").mkdir()
    (tmp_path / "kforge_side.py").write_text(script)  # kforge's code: neither a string nor in the private folder
    package = os.path.dirname(os.path.dirname(kernel_profile.__file__))
    done = subprocess.run([sys.executable, str(tmp_path / "kforge_side.py")], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=package), timeout=60)
    assert done.stdout.split("\n")[:3] == ["ran", "other refused", "refused once withdrawn"], done.stderr
    violations = audit_violations(tmp_path / "private")
    assert len(violations) == 1 and violations[0].startswith("running ")  # both refusals, recorded once


def audit_violations(folder):
    from kforge_worker import audit
    return audit.read_violations(str(folder))
