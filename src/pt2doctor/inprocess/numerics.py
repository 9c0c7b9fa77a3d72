"""``pt2doctor.compare_modules``: where compiled numbers leave eager's (cases/numerics.py, which
check's alignment also calls for a cell that fails); ``pt2doctor.compare_gradients``: where
compiled gradients do (cases/gradients.py)."""

from __future__ import annotations

from pt2doctor.cases.gradients import GradientCheck, GradientComparison, compare_gradients
from pt2doctor.cases.numerics import Comparison, ModuleCheck, compare_modules

__all__ = [
    "Comparison",
    "GradientCheck",
    "GradientComparison",
    "ModuleCheck",
    "compare_gradients",
    "compare_modules",
]
