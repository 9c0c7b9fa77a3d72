"""pt2doctor: explain and verify torch.compile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.inprocess.compilability import should_compile
    from pt2doctor.inprocess.custom_ops import opcheck
    from pt2doctor.inprocess.numerics import compare_gradients, compare_modules
    from pt2doctor.inprocess.session import Watch, watch

__version__ = "0.1.0"
__all__ = [
    "Watch",
    "__version__",
    "compare_gradients",
    "compare_modules",
    "opcheck",
    "should_compile",
    "watch",
]
# The in-process API (pt2doctor.inprocess, which names each one's module) is imported on first
# use: the CLI's report path never needs it.
__getattr__ = lazy_names(__name__, dict.fromkeys(set(__all__) - {"__version__"}, "inprocess"))
