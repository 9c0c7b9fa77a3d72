"""Recompiles: why each compile happened, what changed, whether a frame's variants are bounded,
and the fix written for this code.

``compile_ledger`` (each compile's cause, frames, failures, phases), ``categorize_guard``
(failed-guard categories), ``explain_frames`` (each recompile's changes in the user's own
expressions, the variant table and its outlook), ``recompile_fixes`` (the fixes),
``display_name`` (a frame as the user knows it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.recompiles.fixes import recompile_fixes
    from pt2doctor.analysis.recompiles.frame_names import display_name
    from pt2doctor.analysis.recompiles.guards import FailedGuard, categorize_guard
    from pt2doctor.analysis.recompiles.ledger import Ledger, compile_ledger
    from pt2doctor.analysis.recompiles.outlook import FrameExplanation, explain_frames

_HOMES = {
    "FailedGuard": "guards",
    "FrameExplanation": "outlook",
    "Ledger": "ledger",
    "categorize_guard": "guards",
    "compile_ledger": "ledger",
    "display_name": "frame_names",
    "explain_frames": "outlook",
    "recompile_fixes": "fixes",
}
__all__ = [
    "FailedGuard",
    "FrameExplanation",
    "Ledger",
    "categorize_guard",
    "compile_ledger",
    "display_name",
    "explain_frames",
    "recompile_fixes",
]
__getattr__ = lazy_names(__name__, _HOMES)
