import pytest
import torch

import kforge_worker.inputs as inputs_module
from kforge_worker.inputs import (derive_distribution, is_dense, randomize_parameters, roll_rows_into, rolled_inputs,
                                  row_count)


def test_rolling_rows_is_a_permutation_of_whole_rows():
    x = torch.softmax(torch.randn(6, 5), dim=1)
    out = torch.empty_like(x)
    roll_rows_into(out, x, 2)
    assert torch.equal(out, torch.roll(x, shifts=-2, dims=0))
    assert torch.allclose(out.sum(dim=1), torch.ones(6))


def test_single_row_tensors_roll_elements():
    x = torch.arange(7.0).reshape(1, 7)
    assert row_count(x) == (7, 1)
    out = torch.empty_like(x)
    roll_rows_into(out, x, 3)
    assert sorted(out.flatten().tolist()) == sorted(x.flatten().tolist())
    assert not torch.equal(out, x)


def test_rolled_inputs_leave_integer_inputs_alone():
    logits, targets = torch.randn(4, 3), torch.tensor([0, 1, 2, 0])
    rolled = rolled_inputs([logits, targets, 5], 1)
    assert rolled[1] is targets and rolled[2] == 5
    assert not torch.equal(rolled[0], logits)


def test_distributions_change_float_inputs_only():
    x, idx = torch.rand(100), torch.arange(4)
    signed = derive_distribution([x, idx], "signed", 1)
    assert (signed[0] < 0).any() and signed[1] is idx
    assert torch.allclose(signed[0].abs(), x)
    assert torch.allclose(derive_distribution([x], "scaled_up", 1)[0], x * 1000)
    assert (derive_distribution([x], "shifted", 1)[0] > x).all()
    with pytest.raises(ValueError):
        derive_distribution([x], "nonsense", 1)


def test_a_derived_set_is_one_copy_changed_chunk_by_chunk(monkeypatch):
    monkeypatch.setattr(inputs_module, "DERIVE_CHUNK", 7)  # many chunks, one not full
    x = torch.rand(10, 9).t()  # not contiguous
    kept = x.clone()
    signed = derive_distribution([x], "signed", 3)[0]
    assert signed.is_contiguous() and torch.equal(signed, derive_distribution([x], "signed", 3)[0])
    assert torch.equal(signed.abs(), x) and (signed < 0).sum() > 20 and (signed > 0).sum() > 20
    assert not torch.equal(signed, derive_distribution([x], "signed", 4)[0])
    assert torch.allclose(derive_distribution([x], "scaled_down", 3)[0], x * 1e-3)
    assert torch.allclose(derive_distribution([x], "shifted", 3)[0], x + 1.0 + x.std())
    assert torch.equal(x, kept)  # the set it was derived from is untouched
    half = derive_distribution([x.half()], "signed", 3)[0]
    assert half.dtype == torch.float16 and torch.equal(half.abs(), x.half())


def test_a_swap_exchanges_a_random_element_with_the_farthest_of_its_row():
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(0))
    for seed in range(20):
        swapped = derive_distribution([x], "swapped", seed)[0]
        moved = (swapped != x).nonzero()
        assert moved.shape[0] == 2 and moved[0, 0] == moved[1, 0]  # two elements of one row
        row = x[moved[0, 0]]
        first, second = x[moved[0, 0], moved[0, 1]], x[moved[1, 0], moved[1, 1]]
        assert (first - second).abs() in ((row - first).abs().max(), (row - second).abs().max())  # one is the farthest
        assert torch.equal(swapped.sort(dim=1).values, x.sort(dim=1).values)
    assert not torch.equal(derive_distribution([x], "swapped", 1)[0], derive_distribution([x], "swapped", 2)[0])
    constant = torch.ones(3, 4)
    assert torch.equal(derive_distribution([constant], "swapped", 0)[0], constant)


def test_randomized_parameters_leave_defaults_and_keep_variances_positive():
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.LayerNorm(4), torch.nn.BatchNorm1d(4))
    randomize_parameters(model, 3)
    norm, batch_norm = model[1], model[2]
    assert not torch.equal(norm.weight, torch.ones(4)) and not torch.equal(norm.bias, torch.zeros(4))
    assert (batch_norm.running_var > 0).all() and not torch.equal(batch_norm.running_mean, torch.zeros(4))
    assert batch_norm.num_batches_tracked.item() == 0


def test_dense_layouts():
    x = torch.randn(4, 5)
    assert is_dense(x) and is_dense(x.t())
    assert not is_dense(torch.randn(4, 1).expand(4, 5))
    assert not is_dense(x[:, ::2])
