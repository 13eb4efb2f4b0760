import pytest
import torch

from kforge_worker import output_sample
from kforge_worker import compare
from kforge_worker.compare import Tolerance, compare_outputs, compare_tensor
from kforge_worker.output_sample import Sampled

FP32 = Tolerance(rtol=1e-4, atol=1e-4)


def test_identical_outputs_pass():
    x = torch.randn(64, 32)
    report = compare_tensor(x.clone(), x, FP32)
    assert report["passed"] and report["max_abs_error"] == 0


def test_fp32_reordering_noise_passes():
    a, b = torch.randn(64, 512), torch.randn(512, 32)
    reference = (a.double() @ b.double()).float()
    report = compare_tensor(a @ b, reference, FP32)
    assert report["passed"], report


@pytest.mark.parametrize("scale", [1.0, 1e-6, 1e6])
def test_zeros_fail_whatever_the_magnitude(scale):
    reference = torch.randn(128) * scale
    report = compare_tensor(torch.zeros(128), reference, FP32)
    assert not report["passed"]
    assert report["max_rel_error"] > 0.5


def test_gelu_tanh_approximation_fails_fp32():
    x = torch.randn(4096) * 3
    exact = torch.nn.functional.gelu(x)
    approx = torch.nn.functional.gelu(x, approximate="tanh")
    assert not compare_tensor(approx, exact, FP32)["passed"]


def test_bf16_arithmetic_fails_fp32_but_passes_bf16_policy():
    a, b = torch.randn(64, 256), torch.randn(256, 64)
    reference = a @ b
    downgraded = (a.bfloat16() @ b.bfloat16()).float()
    assert not compare_tensor(downgraded, reference, FP32)["passed"]
    assert compare_tensor(downgraded, reference, Tolerance(rtol=1.6e-2, atol=3e-2))["passed"]


def test_nan_where_reference_is_finite_fails_and_matching_nan_passes():
    reference = torch.tensor([1.0, float("nan"), 3.0])
    bad = torch.tensor([1.0, float("nan"), float("nan")])
    report = compare_tensor(bad, reference, FP32)
    assert not report["passed"] and report["nonfinite_where_reference_finite"] == 1
    assert compare_tensor(reference.clone(), reference, FP32)["passed"]


def test_shape_and_dtype_mismatch_are_named():
    reference = torch.zeros(2, 3)
    assert "shape" in compare_tensor(torch.zeros(3, 2), reference, FP32)["problem"]
    assert "dtype" in compare_tensor(torch.zeros(2, 3, dtype=torch.float64), reference, FP32)["problem"]


def test_integer_outputs_must_match_exactly():
    reference = torch.tensor([1, 2, 3])
    report = compare_tensor(torch.tensor([1, 2, 4]), reference, FP32)
    assert not report["passed"] and report["mismatched"] == 1 and report["worst_index"] == [2]


def test_worst_element_is_located():
    reference = torch.zeros(4, 5)
    candidate = reference.clone()
    candidate[2, 3] = 1.0
    report = compare_tensor(candidate, reference, FP32)
    assert report["worst_index"] == [2, 3]


def test_output_count_mismatch():
    assert not compare_outputs([torch.zeros(1)], [torch.zeros(1), torch.zeros(1)], FP32)["passed"]


def _sampled(tensor: torch.Tensor, keys: torch.Tensor) -> Sampled:
    return output_sample.take(tensor, keys)


def test_sampled_output_is_judged_at_its_positions_against_the_whole_scale():
    keys = torch.randint(0, 1 << 62, (64,), dtype=torch.int64)
    reference = torch.randn(32, 32)
    assert compare_tensor(_sampled(reference.clone(), keys), reference, FP32)["passed"]
    wrong = reference.clone()
    wrong.view(-1)[output_sample.positions(keys, wrong.numel(), "cpu")[5]] += 1.0
    report = compare_tensor(_sampled(wrong, keys), reference, FP32)
    assert not report["passed"] and report["sampled_elements"] == 64
    flat = int(output_sample.positions(keys, reference.numel(), "cpu")[5])
    assert report["worst_index"] == [flat // 32, flat % 32]
    assert report["reference_rms"] == pytest.approx(reference.double().pow(2).mean().sqrt().item())


def test_an_output_no_larger_than_the_sample_is_kept_whole():
    keys = torch.randint(0, 1 << 62, (64,), dtype=torch.int64)
    small = torch.randn(8, 8)
    kept = output_sample.take(small, keys)
    assert isinstance(kept, torch.Tensor) and torch.equal(kept, small) and kept.data_ptr() != small.data_ptr()


def test_sampled_output_of_the_wrong_shape_or_length_fails():
    keys = torch.randint(0, 1 << 62, (16,), dtype=torch.int64)
    reference = torch.randn(8, 8)
    assert "shape" in compare_tensor(_sampled(torch.randn(4, 16), keys), reference, FP32)["problem"]
    short = Sampled(torch.randn(3), [8, 8], output_sample.positions(keys, 64, "cpu"))
    assert "sample holds 3" in compare_tensor(short, reference, FP32)["problem"]


def test_sampled_integer_output_counts_sampled_mismatches():
    keys = torch.randint(0, 1 << 62, (16,), dtype=torch.int64)
    reference = torch.arange(100)
    wrong = torch.zeros(100, dtype=torch.int64)
    report = compare_tensor(_sampled(wrong, keys), reference, FP32)
    assert not report["passed"] and "sampled elements differ" in report["problem"]


@pytest.mark.parametrize("chunk", [7, 64, 1 << 24])
def test_chunked_judgement_matches_the_whole(monkeypatch, chunk):
    """The same report whatever the chunk size: scale, worst element and its ratio, NaN counts."""
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", chunk)
    reference = torch.randn(37, 11)
    reference[3, 4] = float("nan")
    candidate = reference + 1e-6 * torch.randn(37, 11)
    candidate[3, 4] = float("nan")
    candidate[20, 7] += 0.5
    candidate[30, 1] = float("inf")
    report = compare_tensor(candidate, reference, FP32)
    assert not report["passed"] and report["nonfinite_where_reference_finite"] == 1
    assert report["worst_index"] == [30, 1]
    finite = reference[torch.isfinite(reference)].double()
    assert report["reference_rms"] == pytest.approx(finite.pow(2).mean().sqrt().item())
    candidate[30, 1] = reference[30, 1]
    report = compare_tensor(candidate, reference, FP32)
    assert report["worst_index"] == [20, 7] and report["max_abs_error"] == pytest.approx(0.5, rel=1e-3)


def test_an_output_only_described_fails_on_its_shape():
    reference = torch.randn(4, 4)
    described = torch.empty(5, 4, device="meta")
    assert "shape [5, 4]" in compare_tensor(described, reference, FP32)["problem"]


def test_a_failing_output_says_where_its_bad_elements_are():
    tol = Tolerance(rtol=1e-4, atol=1e-4)
    ref = torch.rand(64, 1024) + 1.0  # every element far from 0
    tail = ref.clone()
    tail[:, 768:] = 0.0
    pattern = compare_tensor(tail, ref, tol)["pattern"]
    assert pattern["bad_elements"] == 64 * 256 and pattern["checked_elements"] == 64 * 1024
    assert pattern["columns"]["words"] == "every column from 768 on (the tail), and no other"
    assert pattern["rows"]["words"] == "every row"
    spot = ref.clone()
    spot[5:9, 3] += 1.0
    pattern = compare_tensor(spot, ref, tol)["pattern"]
    assert pattern["bad_elements"] == 4
    assert pattern["rows"]["words"] == "rows 5 to 8 only" and pattern["columns"]["words"] == "column 3 only"
    assert "pattern" not in compare_tensor(ref.clone(), ref, tol)  # a passing output pays for no second pass
