"""The profiled window of ``pt2doctor run --profile``: the torch profiler over a bounded number
of steady-state calls of the program's hot compiled graph.

The window opens once warmup is over: right after a compiled graph's ``warmup``-th call with no
compile since its previous call (that graph is then the *hot* one). It closes right after the
hot graph's ``calls``-th call after that (or after ``seconds``, or at exit), so it holds
``calls`` whole periods of the program's loop; the hot region's last call is cut where the
window ends, and the analysis knows it. Two zero-length markers (``pt2doctor: window
start``/``end``) bound it in the trace, and one (``pt2doctor: call``) ends each period.

Each period's wall time and the main thread's CPU time over it are kept
(trace/spread.py ``calls_noise``): a period the machine preempted is named, and the analysis
leaves it out. A window too noisy to trust even so (over a quarter of its periods preempted,
or a spread over a quarter of the median) is measured once more over the program's next calls;
the quieter of the two is kept, and the other is described beside it. At close the profile is
exported as a Chrome trace
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

from pt2doctor.capture.sampler import StackSampler
from pt2doctor.rundir import (
    PROFILE_DIR,
    PROFILE_END_MARK,
    PROFILE_PERIOD_MARK,
    PROFILE_START_MARK,
    PROFILE_TRACE,
    PROFILE_WINDOW,
)
from pt2doctor.trace.spread import CallsNoise, calls_noise

PROFILE_ENV = "PT2DOCTOR_PROFILE"
"""``calls[,warmup[,seconds]]``: set by ``run --profile`` for the child."""
DEFAULT_CALLS = 20
DEFAULT_WARMUP = 5
DEFAULT_SECONDS = 30.0
REMEASURES = 1
"""A noisy window is measured again this many times at most."""


STACK_SAMPLES_ENV = "PT2DOCTOR_STACK_SAMPLES"
"""The window's stack samples (``run --profile-stacks``): milliseconds between two; unset or 0,
none. Off by default: the sampling thread's wakeups slow the window's calls (a third more
time per call on mlp_block.py, docs/PERFORMANCE.md)."""


def _sample_interval_ms() -> float:
    try:
        return float(os.environ.get(STACK_SAMPLES_ENV) or 0)
    except ValueError:
        return 0.0


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
        self.compile_periods: list[int] = []
        """The 0-based period each compile inside the window ran in."""
        self.compiles = 0
        self.compiles_at_call: dict[str, int] = {}
        """Each graph's compile count at its previous call: steady when none came since."""
        self.profiler: Any = None
        self.lock = threading.Lock()
        self.marks: list[tuple[int, int]] = []
        """(wall, main thread CPU) in ns at the window's start and after each hot call."""
        self.kept: dict[str, Any] | None = None
        self.sampler: StackSampler | None = None
        """The window already written, while a noisy one is measured again."""
        self.kept_noise: CallsNoise | None = None
        self.others: list[dict[str, Any]] = []
        """The windows measured and not kept: their noise, and why not."""

    @property
    def warming(self) -> bool:
        """Before the first window opens: the calls after it are timed (the window's, then
        the paired and plain calls after it, torchcompat/paired.py)."""
        return self.state == "waiting" and self.kept is None

    def between_windows(self) -> bool:
        """Done, or between a noisy window and its re-measure (which may be cut short by the
        program's end): what runs outside the profiled calls can run now."""
        return self.state in ("done", "failed") or (self.state == "waiting"
                                                    and self.kept is not None)  # fmt: skip

    def compiled(self, compile_id: str) -> None:
        """A graph was just compiled."""
        self.compiles += 1
        if self.state == "open":
            self.compiles_in_window += 1
            self.compile_periods.append(max(len(self.marks) - 1, 0))

    def after(self, compile_id: str, calls: int) -> None:
        """Right after a graph returned: open the window, or close it after its last call.
        Both at the same point of the hot graph's call, so the window holds whole periods of
        the program's loop."""
        if self.state == "open":
            if compile_id != self.hot:
                return
            self.seen += 1
            self.guarded(self._period)
            if self.seen >= self.calls:
                self.guarded(lambda: self.close("calls"))
            elif time.monotonic() - self.opened_at > self.seconds:
                self.guarded(lambda: self.close("seconds"))
            return
        if self.state != "waiting":
            return
        steady = self.compiles_at_call.get(compile_id) == self.compiles
        self.compiles_at_call[compile_id] = self.compiles
        again = self.kept is None or compile_id == self.hot  # a re-measure: the same graph
        if calls >= self.warmup and steady and again:
            self.guarded(lambda: self._open(compile_id))

    def _period(self) -> None:
        from torch.profiler import record_function

        self.marks.append((time.perf_counter_ns(), time.thread_time_ns()))
        with record_function(PROFILE_PERIOD_MARK):
            pass

    def periods(self) -> tuple[list[float], list[float]]:
        """Each whole period of the window so far: its wall time and the main thread's CPU
        time over it, ms."""
        steps = list(zip(self.marks, self.marks[1:], strict=False))
        return [(b[0] - a[0]) / 1e6 for a, b in steps], [(b[1] - a[1]) / 1e6 for a, b in steps]

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
        self.seen = 0
        self.compiles_in_window = 0
        self.compile_periods = []
        self.opened_at = time.monotonic()
        self.marks = [(time.perf_counter_ns(), time.thread_time_ns())]
        interval_ms = _sample_interval_ms()
        if interval_ms > 0:
            self.sampler = StackSampler(threading.get_ident(), interval_ms / 1e3)
            self.sampler.start()
        self.state = "open"

    def close(self, why: str) -> None:
        """Stop the profiler and write the window (``why``: calls, seconds, exit); a noisy
        window is written and measured again, once; a second window is written only when it is
        quieter than the first and holds more than half its calls (the program may end first)."""
        with self.lock:
            if self.state != "open":
                return
            self.state = "closing"
        from torch.profiler import record_function

        with record_function(PROFILE_END_MARK):
            pass
        wall = time.monotonic() - self.opened_at
        sampled = self.sampler.stop() if self.sampler is not None else None
        self.sampler = None
        self.profiler.stop()
        walls, cpus = self.periods()
        noise = calls_noise(walls, cpus)
        described = noise.as_json() if noise is not None else None
        if self.kept is not None:  # the re-measure of a noisy window
            first = self.kept.get("noise") or {}
            kept = self.kept_noise
            quieter = noise is not None and (kept is None or noise.score < kept.score)
            short = why == "exit" and 2 * self.seen <= self.calls  # half its calls or fewer
            if short or not quieter:
                self.others.append({**(described or {}), "calls": self.seen,
                                    "not_kept": "cut short at exit" if short
                                    else "no quieter"})  # fmt: skip
                self._write_window({**self.kept, "other_windows": self.others})
                self._finish()
                return
            self.others.append({**first, "not_kept": "noisier"})
        trace = self._trace_path()
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
            "compile_periods": self.compile_periods,
            "trace_bytes": trace.stat().st_size,
            "pid": os.getpid(),
            "rank": os.environ.get("RANK"),
            "periods_ms": [round(v, 4) for v in walls],
            "periods_cpu_ms": [round(v, 4) for v in cpus],
            "marks_ns": [at for at, _ in self.marks],
            "samples": sampled,
            "noise": described,
            "other_windows": self.others,
        }
        self._write_window(window)
        again = (noise is not None and noise.noisy and why == "calls"
                 and len(self.others) < REMEASURES and self.kept is None)  # fmt: skip
        if again:
            self.kept, self.kept_noise = window, noise
            self.profiler = None
            self.state = "waiting"  # opens again at the hot graph's next steady call
            return
        self._finish()

    def _trace_path(self) -> Path:
        self.out.mkdir(exist_ok=True)
        return self.out / PROFILE_TRACE.replace(".json", f"{self._suffix()}.json")

    @staticmethod
    def _suffix() -> str:
        rank = os.environ.get("RANK", "")
        return f".rank{rank}" if rank.isdigit() and rank != "0" else ""

    def _write_window(self, window: dict[str, Any]) -> None:
        self.out.mkdir(exist_ok=True)
        described = self.out / PROFILE_WINDOW.replace(".json", f"{self._suffix()}.json")
        described.write_text(json.dumps(window), encoding="utf-8")

    def _finish(self) -> None:
        self.profiler = None
        self.state = "done"
