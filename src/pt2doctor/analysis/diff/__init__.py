"""Diff: what changed between two reports (``pt2doctor diff A B``), report.json being the
contract.

``diff_reports`` (every change, with its verdict), ``Change``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.diff.change import Change
    from pt2doctor.analysis.diff.reports import Diff, diff_reports

_HOMES = {
    "Change": "change",
    "Diff": "reports",
    "diff_reports": "reports",
}
__all__ = ["Change", "Diff", "diff_reports"]
__getattr__ = lazy_names(__name__, _HOMES)
