"""The configuration each autotuned kernel of a candidate chose, as the harness reports it, and how
the harness has autotuners measure."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

CANDIDATE = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=4, num_stages=2),
                              triton.Config({"BLOCK": 32}, num_warps=8, num_stages=3)], key=[])
    @triton.jit
    def double_it(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2.0, mask=i < n)

    @triton.jit
    def plain(x_ptr):
        pass

    class Autotuner:  # a look-alike the candidate defines: not Triton's, reports nothing usable
        best_config = "BLOCK=1"
        fn = None

    not_tuned = Autotuner()
''')

DRIVER = textwrap.dedent('''
    import importlib.util, json, sys
    import torch
    from kforge_worker import tuning
    tuning.measure_on_the_host()
    spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    before = tuning.autotune_choices(module)
    x = torch.arange(40, dtype=torch.float32)
    y = torch.empty_like(x)
    module.double_it[lambda meta: ((40 + meta["BLOCK"] - 1) // meta["BLOCK"],)](x, y, 40)
    assert torch.equal(y, x * 2)
    print(json.dumps({"before": before, "after": tuning.autotune_choices(module)}))
''')


def test_the_chosen_configuration_of_each_autotuned_kernel_is_reported(tmp_path):
    candidate = tmp_path / "candidate.py"
    candidate.write_text(CANDIDATE)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, str(driver), str(candidate)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    import json
    reported = json.loads(done.stdout.strip().splitlines()[-1])
    assert reported["before"] == {}
    assert list(reported["after"]) == ["double_it"]
    chosen = reported["after"]["double_it"]
    assert chosen["kwargs"] in ({"BLOCK": 16}, {"BLOCK": 32})
    assert (chosen["num_warps"], chosen["num_stages"]) == ((4, 2) if chosen["kwargs"]["BLOCK"] == 16 else (8, 3))


BRIEFLY = textwrap.dedent('''
    import triton, triton.testing
    from triton.runtime.autotuner import Autotuner
    from kforge_worker import tuning
    tuning.measure_briefly()

    @triton.jit
    def kernel(x_ptr):
        pass

    plain = Autotuner(kernel, ["x_ptr"], [triton.Config({})], [], None, None)
    own = lambda fn, quantiles: [1.0, 1.0, 1.0]
    custom = Autotuner(kernel, ["x_ptr"], [triton.Config({})], [], None, None, do_bench=own)
    brief = plain.do_bench
    assert brief.func is triton.testing.do_bench, brief
    assert brief.keywords == {"warmup": tuning.BRIEF_WARMUP_MS, "rep": tuning.BRIEF_REP_MS}, brief.keywords
    assert tuning.BRIEF_REP_MS < 100 and tuning.BRIEF_WARMUP_MS < 25  # shorter than Triton's defaults
    assert custom.do_bench is own
    print("ok")
''')


def test_on_the_gpu_autotuners_measure_briefly_unless_they_bring_their_own_benchmark():
    done = subprocess.run([sys.executable, "-c", BRIEFLY], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=ROOT))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
