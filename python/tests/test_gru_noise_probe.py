"""bench/gru_noise_probe.py: its step-by-step GRU is an honest fp32 GRU (at the task's own scale it
matches nn.GRU within the fp32 policy), and on inputs scaled up it reports the reference's stray
from fp64 and the honest computation's ratio to the tolerance."""
from __future__ import annotations

import importlib.util
import os

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = importlib.util.spec_from_file_location("gru_noise_probe", os.path.join(REPO, "bench", "gru_noise_probe.py"))
probe_module = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(probe_module)

TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, 2, True, False, dropout=0, bidirectional=False)

    def forward(self, x, h0):
        return self.gru(x, h0)[1]

def get_inputs():
    return [torch.rand(12, 3, 8), torch.rand(2, 3, 16)]

def get_init_inputs():
    return []
'''


def test_the_stepwise_gru_is_nn_gru_in_another_order():
    torch.manual_seed(0)
    for bidirectional in (False, True):
        gru = torch.nn.GRU(8, 16, 2, bidirectional=bidirectional)
        x, h0 = torch.rand(12, 3, 8), torch.rand(4 if bidirectional else 2, 3, 16)
        with torch.no_grad():
            want = gru(x, h0)
            got = probe_module.stepwise_gru(gru, x, h0)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            assert torch.allclose(g, w, rtol=1e-5, atol=1e-6)


def test_probe_reports_strays_and_the_ratio(tmp_path):
    path = tmp_path / "gru_task.py"
    path.write_text(TASK)
    at_scale = probe_module.probe(str(path), seed=0, scale=1.0)
    assert at_scale["honest_tolerance_ratio"] < 1.0
    assert at_scale["reference_vs_fp64_max"] < 1e-4
    scaled = probe_module.probe(str(path), seed=0, scale=1000.0)
    assert scaled["reference_rms"] > at_scale["reference_rms"]
    assert set(scaled) >= {"reference_vs_fp64_max", "honest_vs_reference_max", "honest_tolerance_ratio"}
