"""Analyses: pure functions from the typed Run to typed results (no printing, no files)."""

from pt2doctor.analysis.breaks import GraphBreakSite, categorize_break, graph_break_sites
from pt2doctor.analysis.findings import Finding, find_findings
from pt2doctor.analysis.guards import FailedGuard, categorize_guard
from pt2doctor.analysis.ledger import Ledger, compile_ledger

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
