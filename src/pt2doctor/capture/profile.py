"""The profiled window of ``pt2doctor run --profile``: the torch profiler over a bounded number
of steady-state calls of the program's hot compiled graph.

The window opens once warmup is over: right after a compiled graph's ``warmup``-th call with no
compile since its previous call (that graph is then the *hot* one). It closes right after the
hot graph's ``calls``-th call after that (or after ``seconds``, or at exit), so it holds
``calls`` whole periods of the program's loop; the hot region's last call is cut where the
window ends, and the analysis knows it. Two zero-length markers (``pt2doctor: window
start``/``end``) bound it in the trace. At close the profile is exported as a Chrome trace
(``profile/trace.json``) with ``profile/window.json`` beside it, and the profiler is gone;
rank N > 0 of a distributed run writes ``trace.rank<N>.json`` and ``window.rank<N>.json``
(the report reads rank 0's).

Only public torch API here (``torch.profiler``); it is imported when the window opens.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pt2doctor.rundir import (
    PROFILE_DIR,
    PROFILE_END_MARK,
    PROFILE_START_MARK,
    PROFILE_TRACE,
    PROFILE_WINDOW,
)

PROFILE_ENV = "PT2DOCTOR_PROFILE"
"""``calls[,warmup[,seconds]]``: set by ``run --profile`` for the child."""
DEFAULT_CALLS = 20
DEFAULT_WARMUP = 5
DEFAULT_SECONDS = 30.0


def window_from_env(
    run_dir: Path, on_error: Callable[[str, BaseException], None]
) -> ProfileWindow | None:
    value = os.environ.get(PROFILE_ENV)
    if not value:
        return None
    parts = ([*value.split(","), "", "", ""])[:3]
    calls = int(parts[0]) if parts[0] else DEFAULT_CALLS
    warmup = int(parts[1]) if parts[1] else DEFAULT_WARMUP
    seconds = float(parts[2]) if parts[2] else DEFAULT_SECONDS
    return ProfileWindow(run_dir, calls, warmup, seconds, on_error)


class ProfileWindow:
    """Opens and closes the profiler from the compiled-graph wrapper (``after`` each call,
    ``compiled`` for each new graph), once per process."""

    def __init__(
        self,
        run_dir: Path,
        calls: int,
        warmup: int,
        seconds: float,
        on_error: Callable[[str, BaseException], None],
        kernel_profile: bool = True,
    ) -> None:
        self.on_error = on_error
        self.kernel_profile = kernel_profile
        """Whether generated kernels record profiler events (run --profile sets it up)."""
        self.out = run_dir / PROFILE_DIR
        self.calls = calls
        self.warmup = warmup
        self.seconds = seconds
        self.state = "waiting"
        self.hot: str | None = None
        self.seen = 0
        self.opened_at = 0.0
        self.compiles_in_window = 0
        self.compiles = 0
        self.compiles_at_call: dict[str, int] = {}
        """Each graph's compile count at its previous call: steady when none came since."""
        self.profiler: Any = None
        self.lock = threading.Lock()

    def compiled(self, compile_id: str) -> None:
        """A graph was just compiled."""
        self.compiles += 1
        if self.state == "open":
            self.compiles_in_window += 1

    def after(self, compile_id: str, calls: int) -> None:
        """Right after a graph returned: open the window, or close it after its last call.
        Both at the same point of the hot graph's call, so the window holds whole periods of
        the program's loop."""
        if self.state == "open":
            if compile_id != self.hot:
                return
            self.seen += 1
            if self.seen >= self.calls:
                self.guarded(lambda: self.close("calls"))
            elif time.monotonic() - self.opened_at > self.seconds:
                self.guarded(lambda: self.close("seconds"))
            return
        if self.state != "waiting":
            return
        steady = self.compiles_at_call.get(compile_id) == self.compiles
        self.compiles_at_call[compile_id] = self.compiles
        if calls >= self.warmup and steady:
            self.guarded(lambda: self._open(compile_id))

    def guarded(self, action: Callable[[], None]) -> None:
        """The window must never break the program: a failure ends it and is recorded."""
        try:
            action()
        except Exception as error:
            self.state = "failed"
            self.on_error("profile", error)

    def _open(self, compile_id: str) -> None:
        with self.lock:
            if self.state != "waiting":
                return
            self.state = "opening"
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.profiler = profile(activities=activities)
        self.profiler.start()
        with record_function(PROFILE_START_MARK):
            pass
        self.hot = compile_id
        self.opened_at = time.monotonic()
        self.state = "open"

    def close(self, why: str) -> None:
        """Stop the profiler and write the window (``why``: calls, seconds, exit)."""
        with self.lock:
            if self.state != "open":
                return
            self.state = "closing"
        from torch.profiler import record_function

        with record_function(PROFILE_END_MARK):
            pass
        wall = time.monotonic() - self.opened_at
        self.profiler.stop()
        self.out.mkdir(exist_ok=True)
        rank = os.environ.get("RANK", "")
        suffix = f".rank{rank}" if rank.isdigit() and rank != "0" else ""
        trace = self.out / PROFILE_TRACE.replace(".json", f"{suffix}.json")
        self.profiler.export_chrome_trace(str(trace))
        window = {
            "kernel_profile": self.kernel_profile,
            "hot_compile_id": self.hot,
            "calls": self.seen,
            "asked_calls": self.calls,
            "warmup_calls": self.warmup,
            "closed_by": why,
            "wall_s": round(wall, 6),
            "compiles_in_window": self.compiles_in_window,
            "trace_bytes": trace.stat().st_size,
            "pid": os.getpid(),
            "rank": os.environ.get("RANK"),
        }
        described = self.out / PROFILE_WINDOW.replace(".json", f"{suffix}.json")
        described.write_text(json.dumps(window), encoding="utf-8")
        self.profiler = None
        self.state = "done"
