"""Checks every task under tasks/level*/: the KernelBench format, the CPU sizes and the full sizes."""

import importlib.util
import itertools
import pathlib
import time
import types

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

TASKS_ROOT = pathlib.Path(__file__).resolve().parents[2] / "tasks"
TASK_FILES = sorted(TASKS_ROOT.glob("level*/*.py"))
TASK_IDS = [f"{path.parent.name}/{path.stem}" for path in TASK_FILES]

MAX_FULL_TENSOR_BYTES = 1 << 30
MAX_FULL_INPUT_BYTES = 2 << 30
MAX_CPU_TENSOR_ELEMENTS = 20 * 1024
MAX_CPU_FORWARD_SECONDS = 1.0
H200_BYTES_PER_SECOND = 4.8e12
H200_FP32_FLOPS_PER_SECOND = 60e12
MIN_ROOFLINE_MS = 0.05
MAX_ROOFLINE_MS = 10.0


def load_task(path: pathlib.Path) -> types.ModuleType:
    """Imports a task file as a fresh module, so size overrides never leak between tests."""
    spec = importlib.util.spec_from_file_location(f"kforge_task_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def apply_cpu_sizes(module: types.ModuleType) -> None:
    for name, value in module.KFORGE_CPU_SIZES.items():
        setattr(module, name, value)


def tensors_in(value) -> list:
    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]


def tensor_bytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


class LargestTensor(TorchDispatchMode):
    """Records the largest tensor any operator produces, including intermediates inside forward."""

    def __init__(self):
        super().__init__()
        self.max_bytes = 0
        self.max_elements = 0
        self.op_name = ""

    def __torch_dispatch__(self, func, arg_types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for tensor in tensors_in(result):
            if tensor.numel() > self.max_elements:
                self.op_name = str(func)
            self.max_elements = max(self.max_elements, tensor.numel())
            self.max_bytes = max(self.max_bytes, tensor_bytes(tensor))
        return result


def run_on_meta(module: types.ModuleType) -> tuple:
    """Builds the model and runs forward on the meta device: shapes only, nothing allocated."""
    tracker = LargestTensor()
    with torch.device("meta"):
        inputs = module.get_inputs()
        model = module.Model(*module.get_init_inputs())
        with torch.no_grad(), tracker:
            outputs = model(*inputs)
    return inputs, model, outputs, tracker


def test_corpus_size():
    counts = {level: 0 for level in ("level1", "level2", "level3")}
    for path in TASK_FILES:
        counts[path.parent.name] = counts.get(path.parent.name, 0) + 1
    assert len(TASK_FILES) >= 40, counts
    assert counts["level1"] >= 20, counts
    assert counts["level2"] >= 8, counts
    assert counts["level3"] >= 4, counts


def test_task_numbers_are_unique_per_level():
    for level, paths in itertools.groupby(TASK_FILES, key=lambda path: path.parent.name):
        numbers = [path.stem.split("_", 1)[0] for path in paths]
        assert all(number.isdigit() for number in numbers), (level, numbers)
        assert len(numbers) == len(set(numbers)), (level, numbers)
        assert sorted(int(number) for number in numbers) == list(range(1, len(numbers) + 1)), (level, numbers)


@pytest.mark.parametrize("path", TASK_FILES, ids=TASK_IDS)
def test_task_defines_the_format(path):
    module = load_task(path)
    assert isinstance(module.Model, type) and issubclass(module.Model, torch.nn.Module)
    assert callable(module.get_inputs)
    assert callable(module.get_init_inputs)
    assert (module.Model.__doc__ or "").strip(), "Model needs a one-line docstring"
    cpu_sizes = module.KFORGE_CPU_SIZES
    assert isinstance(cpu_sizes, dict) and cpu_sizes
    for name, value in cpu_sizes.items():
        full_value = getattr(module, name, None)
        assert isinstance(full_value, int), f"KFORGE_CPU_SIZES names {name!r}, which is not an int global"
        assert 0 < value <= full_value, f"{name}: cpu {value} vs full {full_value}"


@pytest.mark.parametrize("path", TASK_FILES, ids=TASK_IDS)
def test_task_runs_on_cpu_with_cpu_sizes(path):
    module = load_task(path)
    apply_cpu_sizes(module)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs())
    inputs = module.get_inputs()
    assert all(tensor.device.type == "cpu" for tensor in inputs)
    with torch.no_grad():
        start = time.perf_counter()
        outputs = model(*inputs)
        elapsed = time.perf_counter() - start
    assert elapsed < MAX_CPU_FORWARD_SECONDS, f"forward took {elapsed:.3f} s"
    if isinstance(outputs, tuple):
        assert outputs and all(isinstance(output, torch.Tensor) for output in outputs)
    else:
        assert isinstance(outputs, torch.Tensor)
    for output in tensors_in(outputs):
        assert torch.isfinite(output).all(), "output has non-finite values"


@pytest.mark.parametrize("path", TASK_FILES, ids=TASK_IDS)
def test_task_is_deterministic_given_the_seed(path):
    results = []
    for _ in range(2):
        module = load_task(path)
        apply_cpu_sizes(module)
        torch.manual_seed(0)
        model = module.Model(*module.get_init_inputs())
        inputs = module.get_inputs()
        with torch.no_grad():
            results.append(tensors_in(model(*inputs)))
    for first, second in zip(*results):
        assert torch.equal(first, second)


@pytest.mark.parametrize("path", TASK_FILES, ids=TASK_IDS)
def test_cpu_sizes_keep_every_tensor_small(path):
    module = load_task(path)
    apply_cpu_sizes(module)
    inputs, model, outputs, tracker = run_on_meta(module)
    tensors = tensors_in(inputs) + list(model.parameters()) + list(model.buffers()) + tensors_in(outputs)
    largest = max([tensor.numel() for tensor in tensors] + [tracker.max_elements])
    assert largest <= MAX_CPU_TENSOR_ELEMENTS, f"{largest} elements (largest op: {tracker.op_name})"


@pytest.mark.parametrize("path", TASK_FILES, ids=TASK_IDS)
def test_full_sizes_fit_the_gpu(path):
    module = load_task(path)
    inputs, model, outputs, tracker = run_on_meta(module)
    tensors = tensors_in(inputs) + list(model.parameters()) + list(model.buffers()) + tensors_in(outputs)
    largest = max([tensor_bytes(tensor) for tensor in tensors] + [tracker.max_bytes])
    assert largest <= MAX_FULL_TENSOR_BYTES, f"{largest / 2**30:.2f} GiB (largest op: {tracker.op_name})"
    input_bytes = sum(tensor_bytes(tensor) for tensor in tensors_in(inputs))
    assert input_bytes <= MAX_FULL_INPUT_BYTES, f"inputs take {input_bytes / 2**30:.2f} GiB"


@pytest.mark.parametrize("path", TASK_FILES, ids=TASK_IDS)
def test_sizes_are_read_at_call_time(path):
    """Full and CPU sizes must give different shapes, so no size was baked in at import time."""
    module = load_task(path)
    full_inputs, full_model, _, _ = run_on_meta(module)
    apply_cpu_sizes(module)
    cpu_inputs, cpu_model, _, _ = run_on_meta(module)

    def elements(tensors) -> int:
        return sum(tensor.numel() for tensor in tensors)

    assert elements(tensors_in(cpu_inputs)) < elements(tensors_in(full_inputs)), "CPU sizes do not shrink the inputs"
    full_parameters = elements(full_model.parameters())
    if full_parameters:
        assert elements(cpu_model.parameters()) < full_parameters, "CPU sizes do not shrink the parameters"


@pytest.mark.parametrize("path", TASK_FILES, ids=TASK_IDS)
def test_full_sizes_give_gpu_scale_work(path):
    """The roofline time of one forward on an H200 (compulsory bytes, counted FLOPs) is 0.05 to 10 ms."""
    module = load_task(path)
    flop_counter = FlopCounterMode(display=False)
    with torch.device("meta"):
        inputs = module.get_inputs()
        model = module.Model(*module.get_init_inputs())
        with torch.no_grad(), flop_counter:
            outputs = model(*inputs)
    tensors = tensors_in(inputs) + tensors_in(outputs) + list(model.parameters())
    compulsory_bytes = sum(tensor_bytes(tensor) for tensor in tensors)
    roofline_ms = 1e3 * max(
        compulsory_bytes / H200_BYTES_PER_SECOND, flop_counter.get_total_flops() / H200_FP32_FLOPS_PER_SECOND
    )
    assert MIN_ROOFLINE_MS <= roofline_ms <= MAX_ROOFLINE_MS, f"roofline {roofline_ms:.3f} ms"


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
