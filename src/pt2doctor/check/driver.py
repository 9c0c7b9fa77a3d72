"""``pt2doctor check`` driver: for each case and compile variant, the cold starts and every
group of cells, each in its own worker process; results stream into results.jsonl."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pt2doctor.analysis.findings.verdicts import Outcome, changes, verdict
from pt2doctor.cases.case import Case, Cell
from pt2doctor.cases.variants import CompileVariant
from pt2doctor.check.orchestrate import (
    CheckOptions,
    Job,
    Orchestrator,
    applicability,
    group_jobs,
)
from pt2doctor.check.statistics import steady_summary
from pt2doctor.rundir.read import read_jsonl
from pt2doctor.workers import EventName, last_event
from pt2doctor.workers import Outcome as WorkerOutcome

_CELL_RESULTS: frozenset[EventName] = frozenset({"alignment", "warmup"})
_KEPT_AS_IS: frozenset[EventName] = frozenset({"done", "environment", "custom_ops", "profile"})


class GroupRun:
    """One group under one variant, rerun without the cell that crashed or hung until every
    cell has a verdict."""

    def __init__(self, orch: Orchestrator, job: Job) -> None:
        self.orch, self.job = orch, job
        self.pending = [cell.id for cell in job.cells]
        self.aligned: set[str] = set()
        self.bench_done = False
        self.repeated_blocks = 0
        self.top_fix: dict[str, Any] | None = None
        """The report's first fix pt2doctor can apply (``steady_done``), with its numbers."""
        self.outcome: dict[str, Any] | None = None
        self.tags = {
            "case": job.case.name,
            "variant": job.variant.name,
            "group": job.cells[0].group,
        }

    def run(self) -> None:
        attempt = 0
        while self.pending:
            spec = {
                "cells": self.pending,
                "bench": not self.bench_done,
                "align_cells": [c for c in self.pending if c not in self.aligned],
            }
            outcome = self.orch.launch(self.job, attempt, spec)
            self._collect(outcome, self.job.out / f"attempt-{attempt}")
            if outcome.status == "ok" or not self._attribute(outcome):
                return
            attempt += 1

    def _collect(self, outcome: WorkerOutcome, out: Path) -> None:
        record = self.orch.record
        for event in outcome.events:
            kind: EventName = event.pop("event")
            event.pop("t", None)
            if kind in _CELL_RESULTS:
                record(kind, **self.tags, **event)
                self.aligned.update([event["cell"]] if kind == "alignment" else [])
            elif kind == "model":
                self.repeated_blocks = int(event["repeated_blocks"])
            elif kind == "warmup_done":
                record("warmup_total", **self.tags, seconds=event["seconds"])
            elif kind == "steady_done":
                self.bench_done = True
                self.top_fix, self.outcome = event.get("top_fix"), event.get("outcome")
                summary = steady_summary(
                    read_jsonl(out / "samples.jsonl") or [], self.orch.options.seed
                )
                record(
                    "group",
                    **self.tags,
                    cells=event.pop("cells", self.pending),
                    steady=summary,
                    samples=str(out / "samples.jsonl"),
                    **event,
                )
            elif kind in _KEPT_AS_IS:
                record(kind, **self.tags, **event)

    def _attribute(self, outcome: WorkerOutcome) -> bool:
        """Give the crash or hang to the cell in flight; True when the rest should rerun."""
        flight = outcome.in_flight
        cell, phase = (None, None) if flight is None else (flight["cell"], flight["phase"])
        if cell is not None:
            self.orch.record(
                "alignment" if phase == "align" else "warmup",
                **self.tags,
                cell=cell,
                verdict=outcome.status,
                error=outcome.detail,
                phase=phase,
            )
            self.aligned.add(cell)
            self.pending.remove(cell)
            return True
        if phase == "steady":
            self.orch.record(
                "group",
                **self.tags,
                cells=self.pending,
                status=outcome.status,
                error=outcome.detail,
            )
            self.bench_done = True
            return bool([c for c in self.pending if c not in self.aligned])
        for cell in self.pending:  # died outside any cell (e.g. loading the case file)
            if cell not in self.aligned:
                self.orch.record(
                    "alignment",
                    **self.tags,
                    cell=cell,
                    verdict="error",
                    error=outcome.detail,
                    phase="start",
                )
        return False


def _cold_starts(orch: Orchestrator, case: Case, cell: Cell, variant: CompileVariant) -> None:
    root = orch.options.out / "cold" / case.name / variant.name.replace(":", "-")
    cache = root / "inductor-cache"
    env = {
        "TORCHINDUCTOR_CACHE_DIR": str(cache.resolve()),
        "TRITON_CACHE_DIR": str((cache / "triton").resolve()),
    }
    for which in ("empty_cache", "warm_cache"):
        job = Job("cold", case, [cell], variant, root / which, env)
        outcome = orch.launch(job, 0, {"cells": [cell.id]})
        found = last_event(outcome.events, "cold")  # a cold worker measures once
        fields = (
            {k: v for k, v in found.items() if k not in ("event", "t")}
            if found
            else {"error": outcome.detail or "no measurement"}
        )
        orch.record(
            "cold", case=case.name, variant=variant.name, cache_state=which, cell=cell.id, **fields
        )


def _variants_for(case: Case, options: CheckOptions, blocks: int) -> list[CompileVariant]:
    wanted = options.regional if options.regional is not None else case.regional
    if wanted is False or (wanted is None and blocks < 2):
        return []
    return [CompileVariant(v.mode, v.backend, regional=True) for v in options.variants]


def run_check(
    options: CheckOptions, cases: list[Case], cells: list[Cell], orch: Orchestrator
) -> None:
    orch.record(
        "plan",
        cells=[{"id": c.id, "case": c.case, "group": c.group, "axes": c.axes()} for c in cells],
        variants=[v.as_dict() for v in options.variants],
    )
    for case in cases:
        case_cells = [cell for cell in cells if cell.case == case.name]
        if not case_cells:
            continue
        queue, blocks = list(options.variants), 0
        while queue:
            variant = queue.pop(0)
            blocks = max(blocks, _run_variant(orch, case, case_cells, variant))
            if variant == options.variants[-1] and not variant.regional:
                queue += _variants_for(case, options, blocks)
    orch.record("finished", t=time.time())


def _run_variant(orch: Orchestrator, case: Case, cells: list[Cell], variant: CompileVariant) -> int:
    reason = applicability(variant, cells)
    orch.record(
        "variant", case=case.name, **variant.as_dict(), applicable=reason is None, reason=reason
    )
    if reason is not None:
        return 0
    if orch.options.cold_start:
        _cold_starts(orch, case, cells[0], variant)
    blocks = 0
    for job in group_jobs(case, cells, variant, orch.options.out):
        group = GroupRun(orch, job)
        group.run()
        blocks = max(blocks, group.repeated_blocks)
        if orch.options.try_fixes and group.top_fix and group.outcome:
            try_top_fix(orch, group)
    return blocks


def try_top_fix(orch: Orchestrator, group: GroupRun) -> None:
    """The group again, in a fresh worker, with its top fix applied (the budget's
    ``top_fix_tried``): a ``tried`` record with the numbers before and after and the verdict,
    judged as ``run --try-fixes`` judges (analysis/findings/verdicts.py)."""
    assert group.top_fix is not None and group.outcome is not None
    trial = group.top_fix["trial"]
    job = Job("group", group.job.case, group.job.cells, group.job.variant, group.job.out / "try")
    spec = {"cells": [c.id for c in group.job.cells], "bench": True, "align_cells": [],
            "try_fix": trial}  # fmt: skip
    outcome = orch.launch(job, 0, spec)
    done = next((e for e in outcome.events if e.get("event") == "steady_done"), None)
    row = {**group.tags, "fix": trial["label"], "finding": group.top_fix["finding"],
           "title": group.top_fix["title"], "before": group.outcome}  # fmt: skip
    if done is None or not done.get("outcome"):
        orch.record("tried", **row, after=None, verdict=None,
                    error=outcome.detail or f"the re-run ended {outcome.status}")  # fmt: skip
        return
    before, after = Outcome(**group.outcome), Outcome(**done["outcome"])
    orch.record("tried", **row, after=done["outcome"], verdict=verdict(before, after),
                summary=changes(group.outcome, done["outcome"], wall=False),
                applied=done.get("try_fix_applied") or [])  # fmt: skip
