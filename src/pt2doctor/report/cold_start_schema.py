"""The report's cold-start fields: ``cold_start``, and ``phases``/``caches`` of each compile.

Kept apart from report/schema.py so the cold-start analysis plugs into ``build_report`` with
one call (docs/report-schema.md describes the fields).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pt2doctor.analysis.coldstart.cache_diff import rank_miss_causes
from pt2doctor.analysis.coldstart.caches import compile_caches, own_components, shared_components
from pt2doctor.analysis.coldstart.explain import cold_start_phases, cold_start_section
from pt2doctor.analysis.recompiles.ledger import Ledger
from pt2doctor.trace.types import Run

if TYPE_CHECKING:
    from pt2doctor.analysis.breaks.heat import Heat
    from pt2doctor.report.types import RunReport


def add_cold_start(report: RunReport, run: Run, ledger: Ledger, heat: Heat | None) -> None:
    """Fill ``report["cold_start"]`` and each ``compiles[]`` row's phases and caches (rows are
    in ledger order)."""
    shared = shared_components(run)
    for row, entry in zip(report["compiles"], ledger.compiles, strict=True):
        row["phases"] = cold_start_phases(entry)
        caches = compile_caches(entry.record)
        own = own_components(entry.record, shared, run.cache_component_values)
        for cache, components in own.items():
            caches[cache]["components"] = components
        row["caches"] = caches
    section: dict[str, Any] = cold_start_section(ledger, None if heat is None else heat.wall_s)
    section["key_components"] = shared
    report["cold_start"] = section
    section["rank_miss_causes"] = rank_miss_causes(report)
    _explain_rank_imbalance(report, section["rank_miss_causes"])


# Cache-miss causes added to the rank cache-imbalance finding's evidence.
MAX_RANK_CAUSES = 6


def _explain_rank_imbalance(report: RunReport, causes: list[dict[str, Any]]) -> None:
    """Add why the ranks' lookups differ to the ``rank_cache_imbalance`` finding (and the
    ranks section's divergence) that reports them."""
    lines = [f"{c['stream']} vs {c['against']}: {c['subject']}: {c['detail']}" for c in causes]
    if not lines:
        return
    for finding in report["findings"]:
        if finding["code"] == "rank_cache_imbalance":
            finding["evidence"] = [*finding["evidence"], *lines[:MAX_RANK_CAUSES]]
    ranks = report.get("ranks")
    for divergence in [] if ranks is None else ranks["divergences"]:
        if divergence["kind"] == "cache_imbalance":
            divergence["evidence"] = [*divergence["evidence"], *lines[:MAX_RANK_CAUSES]]
