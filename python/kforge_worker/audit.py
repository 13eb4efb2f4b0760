"""Runtime denial, the second layer behind the kernel's isolation: Python audit hooks (which code
cannot remove once added) in the candidate's process refuse, and report, what no kernel needs:
running programs other than the compilers Triton and load_inline use, forking, network
connections, loading native libraries from the candidate's own code, and reading other
processes' environments or memory. Each refusal is appended to violations.jsonl in the private
folder, which the zygote (trusted) reads after the process ends; the evaluator judges any as
rejected_hack(sandbox). A refusal also raises PermissionError where it happened."""
from __future__ import annotations

import json
import os
import re
import socket
import sys
from typing import Any

VIOLATIONS_FILE = "violations.jsonl"
MAX_RECORDED = 20

# Programs the compilers a kernel legitimately uses run: Triton's ptxas and C launcher build,
# load_inline's nvcc, ninja and host compiler, and what those start.
TOOLCHAIN = frozenset({"ptxas", "nvcc", "ninja", "cc", "c++", "gcc", "g++", "clang", "clang++", "cicc", "nvlink",
                       "fatbinary", "cudafe++", "ld", "ld.bfd", "ld.gold", "as", "collect2", "cc1", "cc1plus",
                       "nvdisasm", "cuobjdump", "which", "ldconfig", "ldconfig.real", "uname"})
_VERSIONED = re.compile(r"^(.*?)(-\d+(\.\d+)*)?$")  # gcc-12, x86_64-linux-gnu-g++-13
# The native libraries torch.cuda._compile_kernel loads (NVRTC, and the CUDA driver to load and
# launch what it compiled) from torch's own code while a candidate's kernel compiles or launches.
_TORCH_RTC_LIBRARIES = re.compile(r"^(libcuda\.so\.1|libnvrtc\.so(\.\d+)?)$")
_TORCH_RTC_LOADER = os.path.join("torch", "cuda", "_utils.py")
_OTHER_PROCESS = re.compile(r"^/proc/(\d+|thread-self/\.\.)/(environ|mem|maps|cmdline|auxv|syscall|stack)$")


def _toolchain(program: Any) -> bool:
    if program is None:
        return False
    name = os.path.basename(os.fsdecode(program))
    name = _VERSIONED.match(name).group(1)  # type: ignore[union-attr]
    if name.startswith("x86_64-linux-gnu-"):
        name = name[len("x86_64-linux-gnu-"):]
    return name in TOOLCHAIN


def _program(event: str, args: tuple) -> Any:
    if event == "subprocess.Popen":
        executable, argv = args[0], args[1]
        if executable is None and isinstance(argv, (list, tuple)) and argv:
            return argv[0]
        if executable is None and isinstance(argv, (str, bytes)):
            return os.fsdecode(argv).split()[0] if os.fsdecode(argv).split() else None
        return executable
    return args[0] if args else None


def _loaded_for_torch_rtc(args: tuple) -> bool:
    """Whether a dlopen is torch.cuda._compile_kernel's own, of NVRTC or the CUDA driver: the
    first frame outside ctypes is torch/cuda/_utils.py."""
    if not args or not isinstance(args[0], (str, bytes)) or not _TORCH_RTC_LIBRARIES.match(os.fsdecode(args[0])):
        return False
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename == __file__ or
                                 frame.f_code.co_filename.endswith(os.path.join("ctypes", "__init__.py"))):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.endswith(_TORCH_RTC_LOADER)


class RuntimeDenial:
    def __init__(self, private_dir: str, candidate_files: list[str]):
        self.private_dir = os.path.realpath(private_dir)
        self.candidate_files = {os.path.realpath(path) for path in candidate_files}
        self.recorded = 0
        self.fd = os.open(os.path.join(private_dir, VIOLATIONS_FILE),
                          os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self.busy = False
        self.sanctioned: list[str] | None = None

    def sanction(self, argv: list[str] | None) -> None:
        """Lets kforge's own code (never the candidate's) start exactly this command line: the
        hardware-counter run of kernel_profile.py, which installs these same hooks in its child."""
        self.sanctioned = list(argv) if argv else None

    def _sanctioned(self, event: str, args: tuple) -> bool:
        return (event == "subprocess.Popen" and self.sanctioned is not None and len(args) > 1
                and isinstance(args[1], (list, tuple)) and [os.fsdecode(a) for a in args[1]] == self.sanctioned
                and not self._from_candidate())

    def _from_candidate(self) -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename in self.candidate_files or filename == "<string>" or filename.startswith(self.private_dir):
                return True
            frame = frame.f_back
        return False

    def _deny(self, what: str) -> None:
        if self.recorded < MAX_RECORDED:
            self.recorded += 1
            try:
                os.write(self.fd, (json.dumps({"what": what[:500]}) + "\n").encode())
            except OSError:
                pass
        raise PermissionError(f"kforge sandbox: {what} is not allowed in a candidate")

    def hook(self, event: str, args: tuple) -> None:
        if self.busy:
            return
        self.busy = True
        try:
            self._judge(event, args)
        finally:
            self.busy = False

    def _judge(self, event: str, args: tuple) -> None:
        if event == "os.system":
            self._deny(f"os.system({os.fsdecode(args[0])[:200] if args and args[0] is not None else ''!r})")
        elif event in ("os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen"):
            program = _program(event, args)
            if not _toolchain(program) and not self._sanctioned(event, args):
                self._deny(f"running {os.fsdecode(program) if program is not None else '?'!r} ({event})")
        elif event in ("os.fork", "os.forkpty"):
            self._deny(event)
        elif event == "socket.__new__" and len(args) > 1 and args[1] not in (-1, socket.AF_UNIX):
            self._deny(f"opening a socket of family {args[1]}")
        elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo",
                       "socket.gethostbyname", "socket.gethostbyaddr"):
            self._deny(f"{event} {args[1] if len(args) > 1 else args[0] if args else ''!r}"[:300])
        elif event == "ctypes.dlopen" and not _loaded_for_torch_rtc(args) and self._from_candidate():
            self._deny(f"loading the native library {args[0]!r} from the candidate's code")
        elif event == "open" and args and isinstance(args[0], (str, bytes)):
            path = os.fsdecode(args[0])
            if path.startswith("/proc/") and _OTHER_PROCESS.match(os.path.normpath(path)):
                pid = path.split("/")[2]
                if pid not in ("self", "thread-self", str(os.getpid())):
                    self._deny(f"reading {path}")


_installed: RuntimeDenial | None = None


def install(private_dir: str, candidate_files: list[str] | None = None) -> RuntimeDenial:
    global _installed
    denial = _installed = RuntimeDenial(private_dir, candidate_files or [])
    sys.addaudithook(denial.hook)
    return denial


def installed() -> RuntimeDenial | None:
    """The denial this process installed, if any."""
    return _installed


def read_violations(private_dir: str) -> list[str]:
    """What the candidate's hooks refused, read by the zygote once the process has ended."""
    try:
        with open(os.path.join(private_dir, VIOLATIONS_FILE), encoding="utf-8", errors="replace") as handle:
            lines = handle.read(64 * 1024).splitlines()
    except OSError:
        return []
    found: list[str] = []
    for line in lines[:MAX_RECORDED]:
        try:
            what = str(json.loads(line)["what"])[:500]
        except (ValueError, KeyError, TypeError):
            what = line[:500]
        if what not in found:
            found.append(what)
    return found
