"""Runtime probes inside the watched process: call counts and time per compiled graph, executions
of each graph-break site, a timestamp and frame call count for each compile.

Records go to ``probes.jsonl`` in the run directory: events as they happen, and a cumulative
snapshot of the counters every second and at exit, so a crash loses at most one second of heat.
Standard library only (the watched interpreter may lack pt2doctor's dependencies).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from pt2doctor import torchcompat

# A crash loses at most this much heat; a snapshot costs a few dict copies and one write.
FLUSH_SECONDS = 0.5
_FRAME_OF = re.compile(r"^(?:!\d+/)?(\d+)/")


class ProbeRecorder:
    """Counters plus an append-only JSON-lines writer (thread-safe)."""

    def __init__(self, run_dir: Path, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.t0 = clock()
        self.wall0 = time.time()
        self.lock = threading.Lock()
        self.graph_calls: dict[str, int] = {}
        self.graph_seconds: dict[str, float] = {}
        self.break_hits: dict[str, int] = {}
        self.stream: TextIO = (run_dir / "probes.jsonl").open("a", encoding="utf-8")
        self.closed = False
        self.pid = os.getpid()

    # -- events -------------------------------------------------------------------------------
    def event(self, kind: str, **fields: Any) -> None:
        record = {"kind": kind, "t": round(self.clock() - self.t0, 6), **fields}
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
        return sum(n for cid, n in self.graph_calls.items() if cid.startswith(prefix))

    def snapshot(self, final: bool = False) -> None:
        with self.lock:
            calls = dict(self.graph_calls)
            seconds = {k: round(v, 6) for k, v in self.graph_seconds.items()}
            breaks = dict(self.break_hits)
        self.event(
            "snapshot",
            pid=self.pid,
            final=final,
            graph_calls=calls,
            graph_seconds=seconds,
            break_hits=breaks,
        )

    def close(self) -> None:
        if self.closed:
            return
        self.snapshot(final=True)
        with self.lock:
            self.closed = True
            self.stream.close()

    # -- wrappers -----------------------------------------------------------------------------
    def count_graph(self, compile_id: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap a compiled graph so each call is counted and timed."""
        self.event(
            "compiled",
            compile_id=compile_id,
            frame_calls=self.frame_calls(compile_id),
            wall_time=time.time(),
        )
        calls, seconds, clock = self.graph_calls, self.graph_seconds, self.clock
        calls.setdefault(compile_id, 0)
        seconds.setdefault(compile_id, 0.0)

        event = self.event

        def counted_graph(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            except BaseException as error:  # which compiled graph raised: for the report
                event(
                    "graph_exception",
                    compile_id=compile_id,
                    type=type(error).__name__,
                    message=str(error)[:2000],
                )
                raise
            finally:
                calls[compile_id] += 1
                seconds[compile_id] += clock() - start

        # Keep calling-convention flags (_boxed_call), not Dynamo's disable() bookkeeping.
        counted_graph.__dict__.update(
            (key, value)
            for key, value in getattr(fn, "__dict__", {}).items()
            if not key.startswith("_torchdynamo_")
        )
        counted_graph.__wrapped__ = fn  # type: ignore[attr-defined]
        return counted_graph

    def count_resume(self, code: types.CodeType, installed: Any) -> Any:
        """Wrap a resume function: each call is one execution of the break before it."""
        key = f"{code.co_filename}:{code.co_name}"
        hits = self.break_hits
        hits.setdefault(key, 0)

        def counted_resume(*args: Any, **kwargs: Any) -> Any:
            hits[key] += 1
            return installed(*args, **kwargs)

        torchcompat.skip_code(counted_resume.__code__)
        return counted_resume


def flush_periodically(recorder: ProbeRecorder) -> Callable[[], None]:
    """Snapshot the counters every FLUSH_SECONDS on a daemon thread; returns ``stop``."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(FLUSH_SECONDS):
            recorder.snapshot()

    threading.Thread(target=loop, daemon=True, name="pt2doctor-probes").start()
    return stop.set


def install_torch_probes(recorder: ProbeRecorder) -> None:
    """Hook compiled graphs and resume functions (once torch._dynamo is imported)."""
    graphs = torchcompat.wrap_compiled_graphs(recorder.count_graph)
    resumes = torchcompat.wrap_resume_functions(recorder.count_resume)
    recorder.event("probes", graphs=graphs, breaks=resumes, torch=torchcompat.torch_version())
    recorder.event("environment", **torchcompat.environment())
