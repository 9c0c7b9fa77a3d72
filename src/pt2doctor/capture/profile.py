"""The profiled window of ``pt2doctor run --profile``: the torch profiler over a bounded number
of steady-state calls of the program's hot compiled graph.

The window opens once warmup is over: right after a compiled graph's ``warmup``-th call with no
compile since its previous call (that graph is then the *hot* one), once the order in which
the program calls its graphs repeats (:class:`CallCycle`). A period of the program's loop is
one turn of that cycle: a graph called once a turn is preferred as the hot one, and a graph
called k times a turn (one layer's graph of a model Dynamo skipped, which calls it once a layer)
marks a period every k-th call, so a period is always a whole step, never a third of one. The
window closes right after the hot graph's ``calls``-th period after that (or after ``seconds``,
or at exit), so it holds ``calls`` whole periods of the program's loop; the hot region's last
call is cut where the window ends, and the analysis knows it. Two zero-length markers (``pt2doctor: window
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
CYCLE_WAIT = 256
"""Graph calls since the last compile after which a program whose calls do not repeat (a
decode loop of varying length) opens the window on its steady graph as it comes."""


class CallCycle:
    """The order of the program's graph calls since its last compile, and its shortest
    period: the smallest p with ``order[i] == order[i - p]`` for every i (the prefix
    function's way: a call that breaks the period moves it to the next one that holds, so
    each call costs O(1) amortised)."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.period = 0

    def reset(self) -> None:
        self.order, self.period = [], 0

    def add(self, compile_id: str) -> None:
        if len(self.order) >= CYCLE_WAIT:
            return
        self.order.append(compile_id)
        n = len(self.order) - 1
        if self.period and self.order[n] == self.order[n - self.period]:
            return
        self.period += 1
        while not all(self.order[i] == self.order[i - self.period]
                      for i in range(self.period, n + 1)):  # fmt: skip
            self.period += 1

    def repeats(self) -> bool:
        """The order has run through its period twice at least."""
        return bool(self.period) and len(self.order) >= 2 * self.period

    def _turn(self) -> list[str]:
        """The last turn of the cycle ([] before the first call)."""
        return self.order[-self.period :] if self.period else []

    def per_turn(self, compile_id: str) -> int:
        """How often ``compile_id`` is called in one turn of the cycle (0: not in it)."""
        return self._turn().count(compile_id)

    def once_a_turn(self) -> bool:
        """Some graph is called once in each turn."""
        turn = self._turn()
        return any(turn.count(graph) == 1 for graph in set(turn))

    def waited(self) -> bool:
        return len(self.order) >= CYCLE_WAIT


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
        """Whole periods of the window so far."""
        self.per_period = 1
        """The hot graph's calls in one period (one turn of the program's cycle)."""
        self.hot_calls = 0
        self.cycle = CallCycle()
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
        self.cycle.reset()
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
            self.hot_calls += 1
            if self.hot_calls % self.per_period:
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
        self.cycle.add(compile_id)
        steady = self.compiles_at_call.get(compile_id) == self.compiles
        self.compiles_at_call[compile_id] = self.compiles
        if self.kept is not None:  # a re-measure: the same graph, the same period
            if compile_id == self.hot and calls >= self.warmup and steady:
                self.guarded(lambda: self._open(compile_id, self.per_period))
            return
        if not (calls >= self.warmup and steady):
            return
        if self.cycle.repeats():
            per_turn = self.cycle.per_turn(compile_id)
            if per_turn == 1 or (per_turn > 1 and not self.cycle.once_a_turn()):
                self.guarded(lambda: self._open(compile_id, per_turn))
        elif self.cycle.waited():  # no cycle: the window's periods are this graph's calls
            self.guarded(lambda: self._open(compile_id, 1))

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

    def _open(self, compile_id: str, per_period: int) -> None:
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
        self.per_period = per_period
        self.seen = self.hot_calls = 0
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
            "hot_calls_per_period": self.per_period,
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
