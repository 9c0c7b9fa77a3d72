"""pt2doctor: explain and verify torch.compile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.inprocess.compilability import should_compile
    from pt2doctor.inprocess.custom_ops import opcheck
    from pt2doctor.inprocess.session import Watch, watch

__version__ = "0.1.0"
__all__ = ["Watch", "__version__", "opcheck", "should_compile", "watch"]
# The in-process API is imported on first use (the CLI's report path never needs it).
__getattr__ = lazy_names(
    "pt2doctor.inprocess",
    {
        "Watch": "session",
        "opcheck": "custom_ops",
        "should_compile": "compilability",
        "watch": "session",
    },
)
