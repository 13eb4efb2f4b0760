import os

import pytest
import torch

from kforge_worker.tensor_files import load_values, save_values


def test_values_round_trip_exactly(tmp_path):
    values = [torch.randn(3, 4), torch.arange(5), torch.tensor([True, False]), 3, None, 2.5,
              torch.randn(4, 3).t(), torch.empty(0, 3), torch.randn(7).bfloat16()]
    described = save_values(str(tmp_path), "x", values)
    loaded = load_values(str(tmp_path), described)
    for original, back in zip(values, loaded):
        if isinstance(original, torch.Tensor):
            assert back.dtype == original.dtype and torch.equal(back, original)
        else:
            assert back == original


def test_a_file_of_the_wrong_size_is_refused(tmp_path):
    described = save_values(str(tmp_path), "x", [torch.randn(10)])
    with open(os.path.join(tmp_path, described[0]["file"]), "ab") as handle:
        handle.write(b"1234")
    with pytest.raises(ValueError, match="bytes"):
        load_values(str(tmp_path), described)


def test_descriptions_cannot_point_outside_the_folder(tmp_path):
    inside = tmp_path / "inside"
    inside.mkdir()
    save_values(str(tmp_path), "secret", [torch.randn(4)])
    with pytest.raises(FileNotFoundError):
        load_values(str(inside), [{"file": "../secret_0.bin", "shape": [4], "dtype": "float32"}])
