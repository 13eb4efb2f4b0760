"""Entry point of a candidate process started as a fresh interpreter (isolation "spawn"):
python -m kforge_worker.fresh_child SANDBOX_JSON PRIVATE_DIR DEVICE JOB_FD."""
from __future__ import annotations

import json
import os
import sys
import traceback


def main() -> int:
    config_path, private_dir, device, job_fd = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    from . import sandbox

    try:
        with open(config_path, encoding="utf-8") as handle:
            data = json.load(handle)
        config = sandbox.SandboxConfig.from_json(data)
        # Namespaces need a process of one thread: the sandbox comes before torch is imported.
        report = sandbox.enter_sandbox(private_dir, config, {job_fd})
        from .zygote import child_main, redirect_output

        redirect_output(private_dir)
        child_main(job_fd, private_dir, config, device, report)
    except BaseException:
        traceback.print_exc()
        return 70
    return 0


if __name__ == "__main__":
    sys.exit(main())
