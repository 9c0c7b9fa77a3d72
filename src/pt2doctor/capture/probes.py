"""Runtime probes inside the watched process: call counts and time per compiled graph, executions
of each graph-break site, a timestamp and frame call count for each compile.

Events go to ``probes.jsonl`` in the run directory as they happen. The counters are not
appended there: every FLUSH_SECONDS (0.5 s) and at exit, each process replaces its own
``counters/<pid>.json`` atomically with their current totals. A crash loses at most that much
heat, and the run directory stays bounded however long a service runs: its size follows the
number of graphs and processes, not the number of snapshots.
Standard library only (the watched interpreter may lack pt2doctor's dependencies).
"""

from __future__ import annotations

import json
import linecache
import os
import re
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from pt2doctor import torchcompat
from pt2doctor.capture.baked import previous_constants, program_key
from pt2doctor.capture.frames import caller_frame
from pt2doctor.rundir import COUNTERS_DIR, PROBES_FILE
from pt2doctor.trace.spread import spread_bucket

# A crash loses at most this much heat; a snapshot costs a few dict copies and one write.
FLUSH_SECONDS = 0.5
# Compiles whose calling line is recorded (a program that recompiles without end stays bounded).
MAX_COMPILE_SITES = 500
# Per-process counter files, under the run directory (see the module docstring).
# Set by torchrun (and other launchers) for each worker: every event says which rank wrote it.
RANK_ENV = "RANK"
_FRAME_OF = re.compile(r"^(?:!\d+/)?(\d+)/")


def _rank_from_env() -> int | None:
    """This process's rank under a distributed launcher (``RANK``), None when not launched so."""
    value = os.environ.get(RANK_ENV, "")
    return int(value) if value.isdigit() else None


class ProbeRecorder:
    """Counters plus an append-only JSON-lines writer (thread-safe; counters and writes share
    one lock)."""

    def __init__(self, run_dir: Path, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.t0 = clock()
        self.wall0 = time.time()
        self.lock = threading.Lock()
        self.graph_calls: dict[str, int] = {}
        self.graph_seconds: dict[str, float] = {}
        self.graph_spread: dict[str, dict[int, int]] = {}
        """Each graph's calls by duration, in log buckets (analysis/time/spread.py): medians
        and spreads per graph without keeping every call."""
        self.break_hits: dict[str, int] = {}
        self.stream: TextIO = (run_dir / PROBES_FILE).open("a", encoding="utf-8")
        self.counters_dir = run_dir / COUNTERS_DIR
        self.counters_dir.mkdir(exist_ok=True)
        # Serializes counter-file writers (the periodic thread, exit, report()): no older
        # snapshot may replace a newer one, and none is written after the final one.
        self.snapshot_lock = threading.Lock()
        self.closed = False
        self.pid = os.getpid()
        self.graph_exceptions = 0
        self.sited: set[str] = set()  # compile ids whose calling line is recorded
        self.rank = _rank_from_env()
        self.window: Any = None
        """The profiled window (``run --profile``: capture/profile.py ProfileWindow)."""
        os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        """A forked child (e.g. a DataLoader worker) must not inherit a held lock."""
        self.lock = threading.Lock()
        self.snapshot_lock = threading.Lock()
        self.pid = os.getpid()

    # -- events -------------------------------------------------------------------------------
    def event(self, kind: str, **fields: Any) -> None:
        record = {"kind": kind, "t": round(self.clock() - self.t0, 6), **fields}
        if self.rank is not None:
            record["rank"] = self.rank
        line = json.dumps(record, default=str)
        with self.lock:
            if not self.closed:
                self.stream.write(line + "\n")
                self.stream.flush()

    def frame_calls(self, compile_id: str) -> int:
        """Calls so far into the compiled graphs of ``compile_id``'s frame."""
        match = _FRAME_OF.match(compile_id)
        if match is None:
            return 0
        prefix = compile_id[: match.end()]
        calls = dict(self.graph_calls)  # a C-level copy: safe while other threads count
        return sum(n for cid, n in calls.items() if cid.startswith(prefix))

    def snapshot(self, final: bool = False) -> None:
        """Replace this process's counter file with the counters now (a no-op once closed)."""
        with self.snapshot_lock:
            if not self.closed:
                self._write_counters(final)

    def _write_counters(self, final: bool) -> None:
        """Write counters/<pid>.json through a temporary file and an atomic rename: a reader
        (or a crash) sees the previous snapshot or this one, never half of one."""
        with self.lock:
            calls = dict(self.graph_calls)
            seconds = dict(self.graph_seconds)
            spread = {key: dict(buckets) for key, buckets in self.graph_spread.items()}
            breaks = dict(self.break_hits)
        record: dict[str, Any] = {
            "kind": "snapshot",
            "t": round(self.clock() - self.t0, 6),
            "pid": self.pid,
            "final": final,
            "graph_calls": calls,
            "graph_seconds": {key: round(value, 6) for key, value in seconds.items()},
            "graph_spread": spread,
            "break_hits": breaks,
        }
        if self.rank is not None:
            record["rank"] = self.rank
        target = self.counters_dir / f"{self.pid}.json"
        tmp = target.with_name(f".{self.pid}.json.tmp")
        tmp.write_text(json.dumps(record, default=str), encoding="utf-8")
        os.replace(tmp, target)

    def close(self) -> None:
        with self.snapshot_lock:
            if self.closed:
                return
            try:
                self._write_counters(final=True)
            except OSError as error:  # a full disk must not end a clean exit with a traceback
                self.event("probe_error", what="snapshot", error=repr(error))
            with self.lock:
                self.closed = True
                self.stream.close()

    # -- wrappers -----------------------------------------------------------------------------
    def guards_timed(self, compile_id: str, microseconds: float) -> None:
        """One warm check of a new variant's guards took ``microseconds``."""
        self.event("guard_check", compile_id=compile_id, us=microseconds)

    def count_graph(self, compile_id: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap a compiled graph so each call is counted and timed."""
        self.event(
            "compiled",
            compile_id=compile_id,
            frame_calls=self.frame_calls(compile_id),
            wall_time=time.time(),
        )
        if compile_id not in self.sited and len(self.sited) < MAX_COMPILE_SITES:
            self.sited.add(compile_id)
            self.compile_site(compile_id)
        calls, seconds, clock = self.graph_calls, self.graph_seconds, self.clock
        calls.setdefault(compile_id, 0)
        seconds.setdefault(compile_id, 0.0)
        buckets = self.graph_spread.setdefault(compile_id, {})
        recorder = self  # the lock is read per call: a forked child gets a fresh one
        window = self.window
        if window is not None:
            window.compiled(compile_id)

        def counted_graph(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            except BaseException as error:
                recorder.graph_exception(compile_id, error)
                raise
            finally:
                elapsed = clock() - start
                bucket = spread_bucket(elapsed)
                with recorder.lock:  # uncontended ~0.1 us; exact counts with threaded callers
                    calls[compile_id] += 1
                    seconds[compile_id] += elapsed
                    buckets[bucket] = buckets.get(bucket, 0) + 1
                    count = calls[compile_id]
                if window is not None:
                    window.after(compile_id, count)

        # Keep calling-convention flags (_boxed_call), not Dynamo's disable() bookkeeping.
        counted_graph.__dict__.update(
            (key, value)
            for key, value in getattr(fn, "__dict__", {}).items()
            if not key.startswith("_torchdynamo_")
        )
        counted_graph.__wrapped__ = fn  # type: ignore[attr-defined]
        return counted_graph

    def compile_site(self, compile_id: str) -> None:
        """A ``compile_site`` event: the user's line that called the frame ``compile_id``
        compiles. Dynamo compiles a frame when it is called, before it runs, so the innermost
        user frame on the stack is its caller; the trace's stack may leave that caller out (a
        compiled function called from another function: torch 2.13 logs the module's line)."""
        frame = caller_frame()
        if frame is None:
            return
        code = linecache.getline(str(frame["file"]), int(frame["line"])).strip()
        self.event("compile_site", compile_id=compile_id, code=code[:200], **frame)

    def graph_exception(self, compile_id: str, error: BaseException) -> None:
        """Record which compiled graph raised (the first 100; never masks the error)."""
        self.graph_exceptions += 1
        if self.graph_exceptions > 100:
            return
        try:
            message = str(error)[:2000]
        except Exception:
            message = "<unprintable>"
        self.event(
            "graph_exception", compile_id=compile_id, type=type(error).__name__, message=message
        )

    def count_resume(self, code: types.CodeType, installed: Any) -> Any:
        """Wrap a resume function: each call is one execution of the break before it."""
        key = f"{code.co_filename}:{code.co_name}"
        hits, recorder = self.break_hits, self
        hits.setdefault(key, 0)

        def counted_resume(*args: Any, **kwargs: Any) -> Any:
            with recorder.lock:
                hits[key] += 1
            return installed(*args, **kwargs)

        torchcompat.skip_code(counted_resume.__code__)
        return counted_resume


def flush_periodically(recorder: ProbeRecorder) -> Callable[[], None]:
    """Snapshot the counters every FLUSH_SECONDS on a daemon thread; returns ``stop``."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(FLUSH_SECONDS):
            try:
                recorder.snapshot()
            except Exception as error:  # keep counting; say once what went wrong
                recorder.event("probe_error", what="snapshot", error=repr(error))

    threading.Thread(target=loop, daemon=True, name="pt2doctor-probes").start()
    return stop.set


def install_torch_probes(recorder: ProbeRecorder) -> None:
    """Hook compiled graphs and resume functions (once torch._dynamo is imported)."""

    def on_error(what: str, error: BaseException) -> None:
        recorder.event("probe_error", what=what, error=f"{type(error).__name__}: {error}")

    graphs = torchcompat.wrap_compiled_graphs(recorder.count_graph, on_error)
    resumes = torchcompat.wrap_resume_functions(recorder.count_resume, on_error)
    timed = torchcompat.time_guards(recorder.guards_timed, on_error)
    recorder.event(
        "probes", graphs=graphs, breaks=resumes, guards=timed, torch=torchcompat.torch_version()
    )
    recorder.event("environment", **torchcompat.environment())
    # Before any compile: a cold start against a full cache dir is keys that changed, not an
    # empty dir (analysis/coldstart).
    entries = torchcompat.cache_dir_entries()
    if entries is not None:
        # ...and the floats the last start of this program baked into its graphs, to compare
        # with this start's (capture/baked.py, cache_key_constant).
        program = program_key()
        before = previous_constants(str(entries["dir"]), program)
        recorder.event("cache_dir", **entries, program=program, constants_before=before)
