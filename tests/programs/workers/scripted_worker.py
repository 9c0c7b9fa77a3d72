"""A worker for the launcher's tests: ``python -m scripted_worker SPEC.json`` runs the spec's
``script`` through :func:`pt2doctor.workers.serve` (no torch, starts in ~0.1 s). Each step:

- ``["emit", NAME, FIELDS]``: one event;
- ``["sleep", SECONDS]``;
- ``["signal", NAME]``: send this process a signal (``SIGSEGV``: a native crash);
- ``["exit", CODE]`` after ``["stderr", TEXT]``: an exit without a ``fatal`` event;
- ``["raise", MESSAGE]``: an error outside any unit (the ``fatal`` event);
- ``["grandchild", PID_FILE]``: start a ``sleep`` below the worker, write its pid;
- ``["facts"]``: an ``environment`` event with this process's pid, parent pid, process group
  and whether torch was imported before the script ran (a forked worker's server preloads it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pt2doctor.workers import Emit, serve


def play(spec: dict[str, Any], out: Path, emit: Emit) -> None:
    for step, *args in spec["script"]:
        if step == "emit":
            emit(args[0], **args[1])
        elif step == "sleep":
            time.sleep(args[0])
        elif step == "signal":
            os.kill(os.getpid(), getattr(signal, args[0]))
        elif step == "stderr":
            print(args[0], file=sys.stderr, flush=True)
        elif step == "exit":
            os._exit(args[0])
        elif step == "raise":
            raise ValueError(args[0])
        elif step == "facts":
            emit("environment", pid=os.getpid(), ppid=os.getppid(), pgid=os.getpgid(0),
                 torch_loaded="torch" in sys.modules)  # fmt: skip
        elif step == "grandchild":
            sleeper = subprocess.Popen(["sleep", "120"])
            Path(args[0]).write_text(str(sleeper.pid))


if __name__ == "__main__":
    sys.exit(serve(None, lambda spec: play))
