"""Cold start, analysed in one pass before the report is assembled: each compile's phases
and cache lookups (with the key components that are its own), the run's ``cold_start``
section, and, across ranks, why a rank's lookups missed where another's hit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pt2doctor.analysis.coldstart.cache_diff import rank_miss_causes
from pt2doctor.analysis.coldstart.caches import compile_caches, own_components, shared_components
from pt2doctor.analysis.coldstart.explain import cold_start_phases, cold_start_section
from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.recompiles.ledger import Ledger
from pt2doctor.trace.types import Run

if TYPE_CHECKING:
    from pt2doctor.analysis.breaks.heat import Heat


@dataclass(frozen=True, slots=True)
class ColdStart:
    """What the cold-start analysis found; ``phases`` and ``caches`` hold one entry per
    compile, in ledger order."""

    phases: list[dict[str, float]]
    caches: list[dict[str, dict[str, Any]]]
    section: dict[str, Any]
    """``report["cold_start"]`` (docs/report-schema.md)."""
    miss_causes: list[dict[str, Any]] = field(default_factory=list)
    """Across ranks: each graph a rank missed that the rank with the fewest misses looked
    up too, with the differing key components (``section["rank_miss_causes"]``)."""
    findings: list[Finding] = field(default_factory=list)
    """The cold-start findings (``COLD_START_FINDINGS``, each given the run's data)."""


def cold_start(run: Run, ledger: Ledger, heat: Heat | None) -> ColdStart:
    shared = shared_components(run)
    phases, caches, rows = [], [], []
    for entry in ledger.compiles:
        phases.append(cold_start_phases(entry))
        found = compile_caches(entry.record)
        own = own_components(entry.record, shared, run.cache_component_values)
        for cache, components in own.items():
            found[cache]["components"] = components
        caches.append(found)
        record = entry.record
        rows.append({"stream": record.stream, "function": entry.function, "file": record.file,
                     "line": record.line, "caches": found})  # fmt: skip
    section: dict[str, Any] = cold_start_section(ledger, None if heat is None else heat.wall_s)
    section["key_components"] = shared
    causes = rank_miss_causes(rows, shared)
    section["rank_miss_causes"] = causes
    findings = [found for finder in COLD_START_FINDINGS for found in finder(run, ledger)]
    return ColdStart(phases, caches, section, causes, findings)


COLD_START_FINDINGS: tuple[Callable[[Run, Ledger], list[Finding]], ...] = ()
"""The cold-start finders, each ``(run, ledger) -> findings``: one line here adds one."""
