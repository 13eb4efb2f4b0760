import torch

from kforge_worker.timing import FreshInputs, LocalHandOff, TimingConfig, _warmed_up, time_calls

CPU = TimingConfig(warmup_calls=1, warmup_ms=0, max_warmup_ms=0, min_calls=4, max_calls=6, budget_ms=1)


def test_warm_up_waits_for_settled_times_within_its_limits():
    config = TimingConfig()
    assert not _warmed_up([1.0] * 3, 50, config)
    assert _warmed_up([1.0] * 12, 250, config)
    assert not _warmed_up([2.0] * 5 + [1.0] * 5, 250, config)
    assert _warmed_up([2.0] * 5 + [1.0] * 5, 1001, config)


def test_every_timed_call_sees_inputs_it_has_not_seen_before():
    seen = []

    def forward(x):
        seen.append(x.clone())
        return x * 2

    base = torch.randn(16, 4)
    measured = time_calls(forward, [base], torch.device("cpu"), CPU)
    assert CPU.min_calls <= len(measured["samples_ms"]) <= CPU.max_calls
    keys = {tuple(x.flatten().tolist()) for x in seen}
    assert len(keys) == len(seen)
    assert not measured["meaningful"]


def test_every_timed_call_is_handed_over_with_the_shift_that_reproduces_its_inputs():
    handed = []
    base = torch.randn(8, 3)
    measured = time_calls(lambda x: x + 1, [base], torch.device("cpu"), CPU,
                          hand_off=lambda call, shift, out: handed.append((call, shift, out.clone())))
    assert [call for call, _, _ in handed] == list(range(len(measured["samples_ms"])))
    assert len(measured["iteration_ms"]) == len(handed)
    fresh = FreshInputs([base])
    for _, shift, output in handed:
        assert torch.equal(output, fresh.refresh(shift)[0] + 1)


def test_the_reference_hands_over_to_a_buffer_of_its_own():
    hand_off = LocalHandOff(torch.device("cpu"))
    hand_off(0, 1, (torch.ones(3), torch.zeros(2)))
    hand_off(1, 2, (torch.full((3,), 2.0), torch.ones(2)))
    assert torch.equal(hand_off.buffers[0], torch.full((3,), 2.0)) and torch.equal(hand_off.buffers[1], torch.ones(2))


def test_integer_inputs_are_not_rotated():
    indices = torch.arange(5)
    fresh = FreshInputs([torch.randn(5, 2), indices])
    assert torch.equal(fresh.refresh(3)[1], indices)
