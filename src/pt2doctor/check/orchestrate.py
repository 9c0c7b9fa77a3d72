"""The parent side of ``pt2doctor check``: plan groups x compile variants, run each in a fresh
worker process with a per-cell timeout, attribute a crash or hang to the cell in flight and go
on with the rest, and stream every result into ``results.jsonl`` as it arrives."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson

from pt2doctor.capture.rundir import CHECK_RESULTS
from pt2doctor.capture.runner import signal_name
from pt2doctor.cases.case import Case, Cell
from pt2doctor.cases.variants import CompileVariant, not_applicable
from pt2doctor.check.cost import launch_cost
from pt2doctor.check.types import STEP_ENDS, CellStartEvent
from pt2doctor.check.worker import EVENTS

RESULTS = CHECK_RESULTS
POLL_SECONDS = 0.2
Progress = Callable[[dict[str, Any]], None]


@dataclass(slots=True)
class CheckOptions:
    case_file: Path
    out: Path
    variants: list[CompileVariant]
    iterations: int = 40
    cell_timeout: float = 600.0
    cold_start: bool = True
    regional: bool | None = None  # None: each case decides (a repeated block found)
    seed: int = 0


@dataclass(slots=True)
class Job:
    """One worker invocation: a case's group of cells (or one cell for a cold start)."""

    kind: str  # group | cold
    case: Case
    cells: list[Cell]
    variant: CompileVariant
    out: Path
    env: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Outcome:
    """How a worker ended, and the events it wrote."""

    events: list[dict[str, Any]]
    status: str  # ok | crash | timeout | fatal
    detail: str = ""
    in_flight: CellStartEvent | None = None


class EventTail:
    """New complete lines of a worker's events.jsonl since the last read."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0
        self.events: list[dict[str, Any]] = []

    def read(self) -> Iterator[dict[str, Any]]:
        try:
            with self.path.open("rb") as stream:
                stream.seek(self.offset)
                data = stream.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            self.events.append(event)
            yield event


class Orchestrator:
    """Runs jobs one after another (2 cores: workers would only fight over them)."""

    def __init__(self, options: CheckOptions, progress: Progress | None = None) -> None:
        self.options = options
        self.progress = progress or (lambda event: None)
        self.results = (options.out / RESULTS).open("ab")

    def record(self, kind: str, **fields: Any) -> None:
        """Append one result to results.jsonl, flushed: an interrupted check keeps it."""
        self.results.write(orjson.dumps({"record": kind, **fields}, default=str) + b"\n")
        self.results.flush()

    def launch(self, job: Job, attempt: int, spec: dict[str, Any]) -> Outcome:
        out = job.out / f"attempt-{attempt}"
        out.mkdir(parents=True, exist_ok=True)
        spec = {
            **spec,
            "kind": job.kind,
            "case_file": str(self.options.case_file.resolve()),
            "case": job.case.name,
            "variant": job.variant.as_dict(),
            "out": str(out),
            "seed": self.options.seed,
            "iterations": self.options.iterations,
            "spawn_time": time.time(),
        }
        (out / "spec.json").write_bytes(orjson.dumps(spec))
        with (out / "stdout.log").open("wb") as stdout, (out / "stderr.log").open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "pt2doctor.check.worker", str(out / "spec.json")],
                env={**os.environ, **job.env},
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
            outcome = self._watch(process, EventTail(out / EVENTS), out)
        self._record_cost(job, attempt, spec["spawn_time"], outcome)
        return outcome

    def _record_cost(self, job: Job, attempt: int, spawned: float, outcome: Outcome) -> None:
        """Where this launch's wall time went (check/cost.py), as a ``cost`` record."""
        cost = launch_cost(job.kind, spawned, time.time(), outcome.events)
        self.record("cost", worker=job.kind, case=job.case.name, variant=job.variant.name,
                    group=job.cells[0].group if job.kind == "group" else None,
                    cache_state=job.out.name if job.kind == "cold" else None,
                    attempt=attempt, **cost)  # fmt: skip

    def _watch(self, process: subprocess.Popen[bytes], tail: EventTail, out: Path) -> Outcome:
        in_flight: CellStartEvent | None = None
        started = time.monotonic()
        try:
            while True:
                ended = process.poll() is not None
                for event in tail.read():
                    self.progress(event)
                    if event["event"] == "cell_start":
                        # Decoded JSON, as the worker wrote it: check/types.py CellStartEvent.
                        in_flight, started = cast(CellStartEvent, event), time.monotonic()
                    elif event["event"] in STEP_ENDS:
                        in_flight = None
                if ended:
                    break
                if time.monotonic() - started > self.options.cell_timeout:
                    _kill(process)
                    return Outcome(
                        tail.events,
                        "timeout",
                        f"timed out after {self.options.cell_timeout:g} s",
                        in_flight,
                    )
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            _kill(process)
            raise
        return worker_ending(process.returncode, tail.events, in_flight, out)


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _stderr_tail(out: Path) -> str:
    try:
        lines = (out / "stderr.log").read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def worker_ending(
    returncode: int, events: list[dict[str, Any]], in_flight: CellStartEvent | None, out: Path
) -> Outcome:
    fatal = next((e for e in events if e["event"] == "fatal"), None)
    if returncode == 0:
        return Outcome(events, "ok")
    if fatal is not None:
        return Outcome(events, "fatal", fatal["error"], in_flight)
    if returncode < 0:
        name = signal_name(-returncode)
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return Outcome(events, "crash", f"crashed: {name}{hint}", in_flight)
    detail = f"crashed: exit {returncode}"
    last = _stderr_tail(out)
    return Outcome(events, "crash", f"{detail}: {last}" if last else detail, in_flight)


def group_jobs(case: Case, cells: list[Cell], variant: CompileVariant, out: Path) -> list[Job]:
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        if cell.case == case.name:
            groups.setdefault(cell.group, []).append(cell)
    return [
        Job(
            "group",
            case,
            members,
            variant,
            out / "groups" / variant.name.replace(":", "-") / key.replace("/", "--"),
        )
        for key, members in groups.items()
    ]


def applicability(variant: CompileVariant, cells: list[Cell]) -> str | None:
    reasons = {not_applicable(variant, device) for device in {cell.device for cell in cells}}
    return None if None in reasons else next(iter(reasons))
