"""The audit hooks' native-library rule: a candidate's own code may not load a library, but the
loads torch.cuda._compile_kernel makes for it (NVRTC, the CUDA driver) from torch's code are its
kernel compiler's, as Triton's are."""
import os
import subprocess
import sys
import textwrap


def test_torch_rtc_loads_pass_and_the_candidates_own_loads_are_refused(tmp_path):
    candidate = tmp_path / "candidate.py"
    candidate.write_text(textwrap.dedent("""
        import ctypes
        import torch.cuda._utils as rtc

        def through_torch():
            for load in (rtc._get_nvrtc_library, rtc._get_gpu_runtime_library):
                try:
                    load()
                except OSError:  # no driver on this machine: the load was let through and failed
                    pass
            return "torch loads let through"

        def own(name):
            try:
                ctypes.CDLL(name)
                return f"{name} loaded"
            except PermissionError:
                return f"{name} refused"
    """))
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import importlib.util
        import torch
        from kforge_worker import audit
        audit.install({str(tmp_path / "private")!r}, [{str(candidate)!r}])
        spec = importlib.util.spec_from_file_location("candidate", {str(candidate)!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(module.through_torch())
        print(module.own("libcuda.so.1"))
        print(module.own("libm.so.6"))
    """))
    (tmp_path / "private").mkdir()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=package), timeout=120)
    assert done.stdout.split("\n")[:3] == ["torch loads let through", "libcuda.so.1 refused", "libm.so.6 refused"], \
        done.stdout + done.stderr
    from kforge_worker import audit
    violations = audit.read_violations(str(tmp_path / "private"))
    assert len(violations) == 2 and all(v.startswith("loading the native library") for v in violations), violations
