"""``pt2doctor.compare_modules``: where compiled numbers leave eager's (cases/numerics.py, which
check's alignment also calls for a cell that fails)."""

from __future__ import annotations

from pt2doctor.cases.numerics import Comparison, ModuleCheck, compare_modules

__all__ = ["Comparison", "ModuleCheck", "compare_modules"]
