"""The report's first screen, "What to do first": at most PLAN_SIZE actions drawn from the
findings, in the order the troubleshooting practice takes them (correctness, then recompiles,
then graph breaks, then performance), one line each.

Only findings that ask for action (errors and warnings) enter the plan. Within a step, what the
profile measured a fix to save comes first, then the findings' own order (hottest breaks first);
a graph-break site appears once, with its measured cost when the profile has one, and a break
that made its whole frame run eagerly is that frame's line. A line whose fix ``--try-fixes``
tried says what the try measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from pt2doctor.analysis.findings.codes import SPECS, STEPS, Area, Step
from pt2doctor.analysis.findings.model import Finding, Subject
from pt2doctor.analysis.findings.verdicts import effect

PLAN_SIZE = 5


@dataclass(slots=True)
class PlanItem:
    step: Step
    code: str
    title: str
    saves_ms: float | None
    tried: str | None = None
    """What ``--try-fixes`` measured for its frame's fix (analysis/findings/verdicts.py
    ``effect``): ``tried recompile_limit = 12: helped, limit hits 1 → 0, compiles 9 → 12``."""
    saves_unmeasured: str | None = None
    """A performance line with no ``saves_ms``: why (the finding's own reason, else its
    area's)."""


UNMEASURED: dict[Area, str] = {
    "trace": "not profiled: `pt2doctor run --profile` measures the time per call",
    "built": "not profiled: `pt2doctor run --profile` measures the time per call",
    "cold start": "it costs compile time at every start, not time per call (the cold start "
    "section has the compile seconds)",
    "ranks": "a difference between ranks, not time per call of one rank",
    "device": "the trace does not show what the fix would leave",
    "profile": "the profile does not show what the fix would leave",
}
"""Why a performance finding of each area with no reason of its own has no ``saves_ms``."""


def _site(finding: Finding) -> Subject | None:
    """A graph-break finding's site; None for any other finding."""
    if finding.subject.kind != "site" or finding.code not in ("graph_break", "graph_break_cost"):
        return None
    return finding.subject


def _site_key(subject: Subject | None) -> tuple[str | None, int | None] | None:
    return None if subject is None else (subject.file, subject.line)


def _identity(step: Step, finding: Finding) -> tuple[str, str]:
    """What a plan line is about: the finding's subject (a frame, a site), or the finding
    itself when its subject has no identity (the program)."""
    return (step, finding.subject.key or f"{finding.code}: {finding.title}")


def plan(findings: list[Finding]) -> list[PlanItem]:
    """The first actions to take, from ``findings`` (sorted by severity already). A graph
    break's site is one line: its ``graph_break`` finding (the fix), with the time its
    ``graph_break_cost`` measured."""
    actionable = [
        (step, f)
        for f in findings
        if f.severity in ("error", "warning") and (step := SPECS[f.code].step) is not None
    ]
    broken = {_site_key(_site(f)) for _, f in actionable if f.code == "graph_break"} - {None}
    skipped = {  # a frame skipped whole (not one recompile Dynamo gave up on: facts.partial)
        (f.subject.file, f.subject.function) for _, f in actionable
        if f.code == "frame_skipped" and not f.facts.get("partial")
    }  # fmt: skip
    # A break's cost under 5% of the step is info, and still the break line's saving.
    cost = {_site_key(_site(f)): f.saves_ms for f in findings if f.code == "graph_break_cost"}
    # The frames a break split off recompile for what the break left on the stack: one
    # cause, one line, the break's (its fix removes both).
    under_breaks = {f.cause for _, f in actionable if f.code == "graph_break" and f.cause}
    actionable = [
        (step, f) for step, f in actionable
        if not (f.code in ("recompiles", "recompile_limit_hit") and f.cause in under_breaks)
    ]  # fmt: skip
    tried = {  # a frame's try, on whichever of its findings the plan shows
        _identity(step, f): effect(f.tries[-1]) for step, f in reversed(actionable) if f.tries
    }
    candidates = []
    subjects: set[tuple[str, str]] = set()
    for index, (step, finding) in enumerate(actionable):
        site = _site_key(_site(finding))
        if finding.code == "graph_break_cost" and site in broken:
            continue  # the break's own finding carries its cost
        subject = _identity(step, finding)
        if subject in subjects:
            continue  # one line per frame or site in a step: the first finding about it
        subjects.add(subject)
        if finding.code == "graph_break" and (
            (finding.subject.file, finding.subject.function) in skipped
        ):
            continue  # the break that made its frame eager: the skipped frame's line says it
        saves = cost.get(site) if finding.code == "graph_break" else finding.saves_ms
        key = (STEPS.index(step), saves is None, -(saves or 0.0), index)
        unmeasured = None
        if saves is None and step == "performance":
            unmeasured = finding.saves_unmeasured or UNMEASURED[SPECS[finding.code].area]
        item = PlanItem(step, finding.code, finding.title, saves, tried.get(subject), unmeasured)
        candidates.append((key, item))
    candidates.sort(key=lambda candidate: candidate[0])
    return [item for _, item in candidates[:PLAN_SIZE]]
