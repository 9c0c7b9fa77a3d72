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

from pt2doctor.analysis.findings.compiles import Finding
from pt2doctor.analysis.findings.tries import effect

PLAN_SIZE = 5
STEPS = ("correctness", "recompiles", "graph breaks", "performance")
_STEP_OF = {
    "compile_failure": "correctness",
    "program_failed": "correctness",
    "rank_specific_failure": "correctness",
    "compiled_but_never_called": "correctness",
    "no_compilation_observed": "correctness",
    "recompile_limit_hit": "recompiles",
    "recompiles": "recompiles",
    "unexplained_recompile_after_warmup": "recompiles",
    "rank_specific_recompile": "recompiles",
    "guard_overhead": "recompiles",
    "graph_break": "graph breaks",
    "graph_break_cost": "graph breaks",
    "frame_skipped": "graph breaks",
    "eager_only_time": "graph breaks",
}
NOT_ACTIONS = frozenset({"probes_unavailable", "triage_run", "parse_problems"})
"""Findings about the capture, not the program."""


@dataclass(slots=True)
class PlanItem:
    step: str
    code: str
    title: str
    saves_ms: float | None
    tried: str | None = None
    """What ``--try-fixes`` measured for its frame's fix (analysis/findings/tries.py
    ``effect``): ``tried recompile_limit = 12: helped, limit hits 1 → 0, compiles 9 → 12``."""


def _site(finding: Finding) -> tuple[str | None, int | None] | None:
    """A graph-break finding's site (file, line); None for any other finding."""
    if finding.where is None or finding.code not in ("graph_break", "graph_break_cost"):
        return None
    return (finding.where.file, finding.where.line)


def _subject(title: str) -> str:
    """What a finding is about: the frame or site its title opens with, up to the first ')'
    (``Layer.forward (modeling.py:89)``), else the whole title."""
    head, close, _ = title.partition(")")
    return head + close if close and " (" in head else title


def plan(findings: list[Finding]) -> list[PlanItem]:
    """The first actions to take, from ``findings`` (sorted by severity already). A graph
    break's site is one line: its ``graph_break`` finding (the fix), with the time its
    ``graph_break_cost`` measured."""
    actionable = [
        f for f in findings if f.severity in ("error", "warning") and f.code not in NOT_ACTIONS
    ]
    broken = {_site(f) for f in actionable if f.code == "graph_break"} - {None}
    skipped = {
        (f.where.file, f.where.function)
        for f in actionable
        if f.code == "frame_skipped" and f.where is not None
    }
    cost = {_site(f): f.saves_ms for f in actionable if f.code == "graph_break_cost"}
    tried = {  # a frame's try, on whichever of its findings the plan shows
        (_STEP_OF.get(f.code, "performance"), _subject(f.title)): effect(f.tries[-1])
        for f in reversed(actionable)
        if f.tries
    }
    candidates = []
    subjects: set[tuple[str, str]] = set()
    for index, finding in enumerate(actionable):
        step = _STEP_OF.get(finding.code, "performance")
        subject = (step, _subject(finding.title))
        if subject in subjects:
            continue  # one line per frame or site in a step: the first finding about it
        subjects.add(subject)
        site = _site(finding)
        if finding.code == "graph_break_cost" and site in broken:
            continue  # the break's own finding carries its cost
        where = finding.where if finding.code == "graph_break" else None
        if where is not None and (where.file, where.function) in skipped:
            continue  # the break that made its frame eager: the skipped frame's line says it
        saves = cost.get(site) if finding.code == "graph_break" else finding.saves_ms
        key = (STEPS.index(step), saves is None, -(saves or 0.0), index)
        item = PlanItem(step, finding.code, finding.title, saves, tried.get(subject))
        candidates.append((key, item))
    candidates.sort(key=lambda candidate: candidate[0])
    return [item for _, item in candidates[:PLAN_SIZE]]
