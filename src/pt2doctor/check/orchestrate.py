"""The parent side of ``pt2doctor check``: plan groups x compile variants, run each in a fresh
worker process with a per-cell timeout, attribute a crash or hang to the cell in flight and go
on with the rest, and stream every result into ``results.jsonl`` as it arrives."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pt2doctor.cases.case import Case, Cell
from pt2doctor.cases.variants import CompileVariant, not_applicable
from pt2doctor.check.cost import launch_cost
from pt2doctor.rundir import CHECK_RESULTS
from pt2doctor.workers import Launcher, Outcome, launch

RESULTS = CHECK_RESULTS
WORKER = "pt2doctor.check.worker"
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
    profile_calls: int | None = None
    """``--profile``: steady-state calls of each group profiled, eager and compiled."""
    try_fixes: bool = False
    """The budget's ``top_fix_tried``: each group with a fix pt2doctor can apply is run again
    with it applied (driver.try_top_fix)."""


@dataclass(slots=True)
class Job:
    """One worker invocation: a case's group of cells (or one cell for a cold start)."""

    kind: str  # group | cold
    case: Case
    cells: list[Cell]
    variant: CompileVariant
    out: Path
    env: dict[str, str] = field(default_factory=dict)


class Orchestrator:
    """Runs jobs one after another (2 cores: workers would only fight over them)."""

    def __init__(
        self, options: CheckOptions, progress: Progress | None = None, launcher: Launcher = launch
    ) -> None:
        self.options, self.launcher = options, launcher
        self.progress = progress or (lambda event: None)
        self.results = (options.out / RESULTS).open("ab")

    def record(self, kind: str, **fields: Any) -> None:
        """Append one result to results.jsonl, flushed: an interrupted check keeps it."""
        self.results.write(orjson.dumps({"record": kind, **fields}, default=str) + b"\n")
        self.results.flush()

    def launch(self, job: Job, attempt: int, spec: dict[str, Any]) -> Outcome:
        """One worker for ``job``; a unit of work that outlasts the cell timeout is a hang."""
        spec = {
            **spec,
            "kind": job.kind,
            "case_file": str(self.options.case_file.resolve()),
            "case": job.case.name,
            "variant": job.variant.as_dict(),
            "seed": self.options.seed,
            "iterations": self.options.iterations,
            "profile_calls": self.options.profile_calls,
        }
        spawned = time.time()
        outcome = self.launcher(
            WORKER,
            spec,
            job.out / f"attempt-{attempt}",
            idle_timeout=self.options.cell_timeout,
            on_event=self.progress,
            env=job.env,
        )
        self._record_cost(job, attempt, spawned, outcome)
        return outcome

    def _record_cost(self, job: Job, attempt: int, spawned: float, outcome: Outcome) -> None:
        """Where this launch's wall time went (check/cost.py), as a ``cost`` record."""
        cost = launch_cost(job.kind, spawned, time.time(), outcome.events)
        self.record("cost", worker=job.kind, case=job.case.name, variant=job.variant.name,
                    group=job.cells[0].group if job.kind == "group" else None,
                    cache_state=job.out.name if job.kind == "cold" else None,
                    attempt=attempt, **cost)  # fmt: skip


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
