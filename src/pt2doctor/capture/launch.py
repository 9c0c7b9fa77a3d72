"""The command line that starts the user's program: as given, or through torchrun for ranks.

pt2doctor never runs a cluster itself: ``--nproc N`` hands the program to PyTorch's own launcher
(``python -m torch.distributed.run``), which starts N workers with RANK/WORLD_SIZE set. They
inherit TORCH_TRACE and the probes' bootstrap, and torch names each worker's log after its rank
(``dedicated_log_torch_trace_rank_1_*.log``) once the process group is up.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pt2doctor.errors import UsageError

LAUNCHER_MODULE = "torch.distributed.run"
_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?(\.exe)?$")
# torchrun options that choose the rendezvous; without any of them a single-node run uses
# --standalone (a c10d rendezvous on a free local port, so concurrent runs do not collide).
RENDEZVOUS_OPTIONS = frozenset(
    {"--nnodes", "--rdzv-backend", "--rdzv-endpoint", "--master-addr", "--master-port"}
)


@dataclass(slots=True)
class Launch:
    """How to start the workers: ``nproc`` per node and torchrun options, as ``--opt=value``."""

    nproc: int
    torchrun_options: list[str] = field(default_factory=list)


def _is_python(arg: str) -> bool:
    return bool(_PYTHON.match(Path(arg).name)) or arg == sys.executable


def _program(command: list[str]) -> tuple[str, list[str]]:
    """(interpreter, torchrun's program arguments) of ``python train.py ARGS``, ``train.py
    ARGS`` or ``python -m module ARGS``."""
    interpreter = sys.executable
    if command and _is_python(command[0]):
        interpreter, command = command[0], command[1:]
    if not command:
        raise UsageError("no program for torchrun: use `pt2doctor run --nproc N -- train.py ARGS`")
    first = command[0]
    if Path(first).name in ("torchrun", "torch.distributed.run"):
        raise UsageError("--nproc launches torchrun itself: give the program, `-- train.py ARGS`")
    if first in ("-m", "--module"):
        if len(command) < 2:
            raise UsageError("-m needs a module name")
        return interpreter, ["-m", *command[1:]]
    if first.startswith("-"):
        raise UsageError(
            f"torchrun starts the workers with its own interpreter flags; cannot pass {first}: "
            "give `train.py ARGS` or `-m module ARGS`"
        )
    return interpreter, command


def check_program(command: list[str]) -> None:
    """A one-line error, before anything starts, for a program that cannot be run: a script
    that does not exist (``python trian.py``), or one given without its interpreter that is
    not executable (``pt2doctor run -- train.py``)."""
    if not command:
        return
    first = command[0]
    if _is_python(first):
        script = next((arg for arg in command[1:] if not arg.startswith("-")), None)
        flags = command[1 : command.index(script)] if script else []
        if script is None or any(flag in ("-m", "-c") or flag.startswith(("-m", "-c"))
                                 for flag in flags):  # fmt: skip
            return
        if not Path(script).exists():
            raise UsageError(f"no such file: {script} (the program {Path(first).name} would run)")
        return
    path = Path(first)
    if "/" not in first and not path.exists():
        return  # a command on PATH (torchrun, a shell script's name)
    if not path.exists():
        raise UsageError(f"no such file: {first}")
    if path.is_file() and not os.access(path, os.X_OK):
        hint = f" (a Python script: `pt2doctor run -- python {first}`)" if first.endswith(
            ".py") else ""  # fmt: skip
        raise UsageError(f"{first} is not executable{hint}")


def launch_argv(command: list[str], launch: Launch | None) -> list[str]:
    """The argv ``run`` executes: ``command`` unchanged, or torchrun starting it on each rank."""
    if launch is None:
        return command
    interpreter, program = _program(command)
    options = list(launch.torchrun_options)
    names = {option.split("=", 1)[0].replace("_", "-") for option in options}
    if not names & RENDEZVOUS_OPTIONS and "--standalone" not in names:
        options.insert(0, "--standalone")
    return [
        interpreter,
        *("-m", LAUNCHER_MODULE),
        f"--nproc-per-node={launch.nproc}",
        *options,
        *program,
    ]
