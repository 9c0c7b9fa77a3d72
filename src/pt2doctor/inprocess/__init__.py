"""The in-process API: what a user calls from their own Python (a test, a notebook), with no
subprocess and no run directory.

``watch`` / ``Watch`` (capture this process's compiles and build the same report as ``run``),
``opcheck`` (is a custom op ready for torch.compile), ``should_compile`` (is a function a good
torch.compile candidate), ``compare_modules`` (where compiled numbers leave eager's), ``compare_gradients`` (where
compiled gradients do). ``pt2doctor.watch``, ``pt2doctor.opcheck`` and
``pt2doctor.should_compile`` are these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.inprocess.compilability import should_compile
    from pt2doctor.inprocess.custom_ops import opcheck
    from pt2doctor.inprocess.numerics import compare_gradients, compare_modules
    from pt2doctor.inprocess.session import Watch, watch

_HOMES = {
    "Watch": "session",
    "compare_gradients": "numerics",
    "compare_modules": "numerics",
    "opcheck": "custom_ops",
    "should_compile": "compilability",
    "watch": "session",
}
__all__ = ["Watch", "compare_gradients", "compare_modules", "opcheck", "should_compile", "watch"]
__getattr__ = lazy_names(__name__, _HOMES)
