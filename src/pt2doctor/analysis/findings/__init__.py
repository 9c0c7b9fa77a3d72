"""Findings: what the user should act on, by severity, with evidence and advice.

``codes`` (the registry: every code once, its plan step and severities), ``model``
(``Finding`` and its ``Subject``), ``find_findings`` (from the trace: breaks, recompiles,
failures), ``run_findings`` (what only a captured run shows: how it ended, recompiles after
warmup, limits), ``sort_findings``, ``plan``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.findings.model import Finding, Subject
    from pt2doctor.analysis.findings.run_findings import run_findings, run_section
    from pt2doctor.analysis.findings.trace_findings import find_findings, sort_findings

_HOMES = {
    "Finding": "model",
    "Subject": "model",
    "find_findings": "trace_findings",
    "run_findings": "run_findings",
    "run_section": "run_findings",
    "sort_findings": "trace_findings",
}
__all__ = ["Finding", "Subject", "find_findings", "run_findings", "run_section", "sort_findings"]
__getattr__ = lazy_names(__name__, _HOMES)
