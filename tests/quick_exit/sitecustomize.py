"""For the test session's traced programs (tests/conftest.py puts this folder on PYTHONPATH):
end the process without the interpreter's teardown (~1.5 s of CPU once torch is loaded; 18
programs a session). Registered before anything else, this handler runs after every other atexit
handler (logging's flush of the TORCH_TRACE file included), then exits with the status the
program would have had: 1 after an uncaught exception, sys.exit's code, else 0. The program
runs as ``python PROGRAM`` ran it: same sys.path, same stacks in its trace."""

import atexit
import contextlib
import os
import sys

_status = [0]


def _exit_now() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(_status[0])


def _excepthook(kind, value, tb):  # type: ignore[no-untyped-def]
    _status[0] = 1
    _previous_hook(kind, value, tb)


def _exit(code=None):  # type: ignore[no-untyped-def]
    _status[0] = code if isinstance(code, int) else (0 if code is None else 1)
    _previous_exit(code)


_previous_hook, _previous_exit = sys.excepthook, sys.exit
sys.excepthook, sys.exit = _excepthook, _exit
atexit.register(_exit_now)
