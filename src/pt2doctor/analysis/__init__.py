"""Analyses: pure functions from the typed Run to typed results (no printing, no files).

One subpackage per question the report answers: ``recompiles`` (why each compile, what
changed, is the variant set bounded, the fix), ``breaks`` (graph-break sites, categories, heat,
advice), ``coldstart`` (where compile time went, which caches missed and why, guard overhead),
``built`` (what the compiler built: kernels mapped to user lines, graph size, fallbacks),
``ranks`` (how the ranks of one distributed run diverge), ``userside`` (is a failure the user's
own code), ``diff`` (what changed between two reports), ``findings`` (what to act on, by
severity). ``paths`` (display paths) and ``op_sequences`` (``should_compile``) serve them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.breaks.sites import GraphBreakSite, categorize_break, graph_break_sites
    from pt2doctor.analysis.findings.model import Finding
    from pt2doctor.analysis.findings.trace_findings import find_findings
    from pt2doctor.analysis.recompiles.guards import FailedGuard, categorize_guard
    from pt2doctor.analysis.recompiles.ledger import Ledger, compile_ledger

_HOMES = {
    "FailedGuard": "recompiles.guards",
    "Finding": "findings.model",
    "GraphBreakSite": "breaks.sites",
    "Ledger": "recompiles.ledger",
    "categorize_break": "breaks.sites",
    "categorize_guard": "recompiles.guards",
    "compile_ledger": "recompiles.ledger",
    "find_findings": "findings.trace_findings",
    "graph_break_sites": "breaks.sites",
}
__all__ = [
    "FailedGuard",
    "Finding",
    "GraphBreakSite",
    "Ledger",
    "categorize_break",
    "categorize_guard",
    "compile_ledger",
    "find_findings",
    "graph_break_sites",
]
__getattr__ = lazy_names(__name__, _HOMES)
