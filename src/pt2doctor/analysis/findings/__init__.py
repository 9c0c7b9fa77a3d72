"""Findings: what the user should act on, by severity, with evidence and advice.

``find_findings`` (from the trace: breaks, recompiles, failures), ``run_findings`` (what only a
captured run shows: how it ended, recompiles after warmup, limits), ``sort_findings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.findings.compiles import Finding, find_findings, sort_findings
    from pt2doctor.analysis.findings.run import run_findings, run_section

_HOMES = {
    "Finding": "compiles",
    "find_findings": "compiles",
    "run_findings": "run",
    "run_section": "run",
    "sort_findings": "compiles",
}
__all__ = ["Finding", "find_findings", "run_findings", "run_section", "sort_findings"]
__getattr__ = lazy_names(__name__, _HOMES)
