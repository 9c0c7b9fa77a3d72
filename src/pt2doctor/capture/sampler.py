"""The Python stack of the hot thread, sampled while the profile window is open (``run
--profile``): which of the user's lines ran the eager time the profiler measures
(analysis/time/lines.py), without the profiler's ``with_stack`` (which adds its cost to every
op it times).

A daemon thread reads the hot thread's current frame every INTERVAL_S
(``sys._current_frames``, CPython's own frame table) and keeps each sample's
``perf_counter_ns`` and its stack from the innermost frame up to the first of the user's own
code (file, line, function; identical stacks stored once). The window's marks carry ``perf_counter_ns`` too, and the same marks are events in
the trace: that pairs the two clocks. The sampler needs the GIL: it samples when the hot
thread releases it (inside an ATen op, which is what is counted) or at CPython's switch
interval, so a sample is not a time slice; times are shares of the trace's own measured eager
op time.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import time
from typing import Any

INTERVAL_S = 0.00025
"""Between two samples."""
MAX_SAMPLES = 40_000
"""Samples kept per window at most (10 s of window at INTERVAL_S)."""
DEPTH = 48
"""Frames kept per sample at most, innermost first, up to the first of the user's own."""
_LIBRARY_DIRS = tuple(
    sorted({sysconfig.get_paths()[key] + "/" for key in ("stdlib", "platstdlib", "purelib",
                                                         "platlib")})
)  # fmt: skip
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/"


def _users_file(path: str) -> bool:
    """Whether a file is the user's own code, as far as the sampler cares (the analysis
    judges again, analysis/time/lines.py): not generated, not a library's, not pt2doctor's."""
    return not (path.startswith("<") or path.startswith(_OWN_DIR) or "-packages/" in path
                or path.startswith(_LIBRARY_DIRS))  # fmt: skip


class StackSampler:
    """Samples the stack of thread ``thread_id`` from ``start()`` to ``stop()``."""

    def __init__(self, thread_id: int, interval_s: float = INTERVAL_S) -> None:
        self.thread_id, self.interval_s = thread_id, interval_s
        self.stacks: dict[tuple[tuple[str, int, str], ...], int] = {}
        self.samples: list[tuple[int, int]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pt2doctor-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        users: dict[Any, bool] = {}  # code object -> whether it is the user's own
        while not self._done.wait(self.interval_s) and len(self.samples) < MAX_SAMPLES:
            frame = sys._current_frames().get(self.thread_id)
            now = time.perf_counter_ns()
            stack: list[tuple[str, int, str]] = []
            while frame is not None and len(stack) < DEPTH:  # up to the user's innermost frame
                code = frame.f_code
                stack.append((code.co_filename, frame.f_lineno or 0, code.co_name))
                own = users.get(code)
                if own is None:
                    own = users[code] = _users_file(code.co_filename)
                if own:
                    break
                frame = frame.f_back
            del frame
            if stack:
                key = tuple(stack)
                self.samples.append((now, self.stacks.setdefault(key, len(self.stacks))))

    def stop(self) -> dict[str, Any]:
        """Stop sampling; the samples as window.json keeps them."""
        self._done.set()
        self._thread.join(timeout=1.0)
        return {
            "interval_ms": self.interval_s * 1e3,
            "stacks": [[list(frame) for frame in stack] for stack in self.stacks],
            "at_ns": [at for at, _ in self.samples],
            "stack": [index for _, index in self.samples],
        }
