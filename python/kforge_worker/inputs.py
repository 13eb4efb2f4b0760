"""Inputs and parameters for evaluations: seeded sets, extra distributions, parameter
randomization and the row permutations that give every timed call fresh inputs."""
from __future__ import annotations

import contextlib
import hashlib
import random
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from .errors import UserError

DISTRIBUTIONS = ("signed", "scaled_up", "scaled_down", "shifted", "swapped")
DERIVE_CHUNK = 1 << 24  # elements a derived distribution changes at a time


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % (2**32))


def call_seed(base: int, label: str) -> int:
    """The global RNG's seed for one call of a model whose forward draws random numbers (dropout,
    torch.randn): the reference's and the candidate's calls on the same inputs start from the same
    state, as KernelBench seeds both. Derived from the evaluation's secret `base` and the call's
    label ("set:seed0", "set:resized", "shift:3", "profile"), so both sides compute it alike."""
    digest = hashlib.sha256(f"{base}:{label}".encode()).digest()
    return int.from_bytes(digest[:7], "little")


@contextlib.contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Seeds the global RNG (CPU and every CUDA device) for a call; nothing when `seed` is None."""
    if seed is not None:
        torch.manual_seed(seed)
    yield


def rng_states() -> list[torch.Tensor]:
    """The global RNG's state: the CPU's and, where CUDA is in use, every device's."""
    states = [torch.random.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states += torch.cuda.get_rng_state_all()
    return states


def same_states(first: list[torch.Tensor], second: list[torch.Tensor]) -> bool:
    return len(first) == len(second) and all(torch.equal(a, b) for a, b in zip(first, second))


def draws_random_numbers(call: Any) -> tuple[Any, bool]:
    """`call()`'s result and whether it advanced the global RNG (CPU or a CUDA device)."""
    before = rng_states()
    result = call()
    return result, not same_states(before, rng_states())


def check_input_values(values: Sequence[Any], where: str) -> None:
    for index, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            if value.layout != torch.strided:
                raise UserError(f"{where}: input {index} is a {value.layout} tensor; only dense tensors are supported")
            continue
        if isinstance(value, (bool, int, float)) or value is None:
            continue
        raise UserError(f"{where}: input {index} is a {type(value).__name__}; inputs must be tensors or numbers")


def is_float_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def derive_distribution(inputs: list, kind: str, seed: int) -> list:
    """The same inputs under another value distribution; non-float inputs stay as they are.
    Deterministic for a seed and device. Each derived tensor is one new copy changed in place,
    chunk by chunk, so deriving a set holds two copies of it at most (a task's multi-GB inputs
    are derived on the GPU beside the candidate's process)."""
    derived = []
    for value in inputs:
        if not is_float_tensor(value) or value.numel() == 0:
            derived.append(value)
            continue
        x = value.detach()
        if kind == "swapped":
            derived.append(_swap_two_in_a_row(x, seed).to(value.dtype))
            continue
        if kind not in ("signed", "scaled_up", "scaled_down", "shifted"):
            raise ValueError(f"unknown distribution {kind}")
        shift = 1.0 + x.float().std().nan_to_num(0.0).item() if kind == "shifted" else 0.0
        out = x.clone(memory_format=torch.contiguous_format)
        flat = out.view(-1)
        generator = torch.Generator(device=x.device).manual_seed(seed) if kind == "signed" else None
        for start in range(0, flat.numel(), DERIVE_CHUNK):
            part = flat[start:start + DERIVE_CHUNK]
            if kind == "signed":
                signs = torch.randint(0, 2, part.shape, generator=generator, device=x.device, dtype=torch.int8)
                part.mul_(signs.mul_(2).sub_(1))
            elif kind == "scaled_up":
                part.mul_(1000.0)
            elif kind == "scaled_down":
                part.mul_(1e-3)
            else:
                part.add_(shift)
        derived.append(out)
    return derived


def _swap_two_in_a_row(x: torch.Tensor, seed: int) -> torch.Tensor:
    """x with two elements of one row exchanged: almost every value where it was (a cache keyed on
    a sample of values still matches) and every per-row property intact. The first element is
    random, the second the one of its row farthest from it in value, so that the right answer
    moves more often than for two random elements (a ReLU of two negatives, a max of two small
    values, would not move)."""
    generator = torch.Generator().manual_seed(seed)
    rows, length = row_count(x)
    flat = x.contiguous().reshape(-1).clone()
    if flat.numel() < 2:
        return x.clone()
    if length < 2:  # single elements (row_count's answer for one row): the whole tensor is the row
        rows, length = 1, flat.numel()
    start = int(torch.randint(0, rows, (1,), generator=generator)) * length if rows > 1 else 0
    first = start + int(torch.randint(0, length, (1,), generator=generator))
    distance = (flat[start:start + length].double() - flat[first].double()).abs().nan_to_num(0.0, 0.0, 0.0)
    second = start + int(distance.argmax())
    if second == first:  # every distance zero (a row of one value, or a NaN or infinite first element): any other
        second = start + (first - start + 1) % length
    held = flat[first].clone()
    flat[first] = flat[second]
    flat[second] = held
    return flat.reshape(x.shape)


def randomize_parameters(model: torch.nn.Module, seed: int) -> None:
    """Moves every float parameter and buffer away from its default, keeping the sign of
    non-negative tensors (variances, scales) so the model stays well defined. Runs where the
    tensors live, with a generator seeded there."""
    generators: dict[torch.device, torch.Generator] = {}
    with torch.no_grad():
        for tensor in list(model.parameters()) + list(model.buffers()):
            if not tensor.is_floating_point() or tensor.numel() == 0:
                continue
            if tensor.device not in generators:
                generators[tensor.device] = torch.Generator(device=tensor.device).manual_seed(seed)
            values = tensor.detach().float()
            noise = torch.rand(values.shape, generator=generators[tensor.device], device=tensor.device)
            if bool((values == 0).all()):
                updated = (noise - 0.5) * 0.2
            elif bool((values >= 0).all()):
                updated = values * (0.5 + noise)
            else:
                spread = values.std().item() if values.numel() > 1 else abs(values.item())
                updated = values + (noise - 0.5) * max(spread, 1e-3)
            tensor.copy_(updated.to(tensor.dtype))


def row_count(tensor: torch.Tensor) -> tuple[int, int]:
    """(rows, row length) of a tensor seen as rows of its last dimension; a single row counts
    as single elements."""
    length = tensor.shape[-1] if tensor.dim() > 0 else 1
    rows = tensor.numel() // max(length, 1)
    if rows < 2:
        return tensor.numel(), 1
    return rows, length


def roll_rows_into(destination: torch.Tensor, source: torch.Tensor, shift: int) -> None:
    """destination := source with its rows rotated by `shift`; a permutation of rows, so any
    per-row property of valid inputs (sums to one, sorted, positive) still holds."""
    rows, length = row_count(source)
    offset = (shift % rows) * length if rows else 0
    flat_source = source.reshape(-1)
    flat_destination = destination.view(-1)
    count = flat_source.numel()
    if offset == 0:
        flat_destination.copy_(flat_source)
        return
    flat_destination[: count - offset].copy_(flat_source[offset:])
    flat_destination[count - offset:].copy_(flat_source[:offset])


def rolled_inputs(inputs: list, shift: int) -> list:
    """A fresh copy of `inputs` with every float tensor's rows rotated by `shift`."""
    result = []
    for value in inputs:
        if is_float_tensor(value) and value.numel() > 0:
            out = torch.empty_like(value, memory_format=torch.contiguous_format)
            roll_rows_into(out, value.contiguous(), shift)
            result.append(out)
        else:
            result.append(value)
    return result


def move_inputs(inputs: list, device: torch.device) -> list:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in inputs]


def tensor_bytes(values: Sequence[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def flatten_outputs(output: Any, where: str) -> list[torch.Tensor]:
    """A forward's result as a flat list of tensors (a tensor, or a tuple/list of them)."""
    if isinstance(output, (list, tuple)):
        flat: list[torch.Tensor] = []
        for item in output:
            flat.extend(flatten_outputs(item, where))
        return flat
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (int, float, bool)):
        return [torch.tensor(output)]
    raise UserError(f"{where}: forward returned a {type(output).__name__}; expected tensors")


def is_dense(tensor: torch.Tensor) -> bool:
    """True when the tensor's elements fill its memory exactly once in some dimension order
    (contiguous, transposed or permuted), unlike an expanded or strided view."""
    dims = sorted((stride, size) for size, stride in zip(tensor.shape, tensor.stride()) if size != 1)
    expected = 1
    for stride, size in dims:
        if stride != expected:
            return False
        expected *= size
    return True
