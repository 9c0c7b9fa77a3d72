"""pt2doctor: explain and verify torch.compile."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Watch", "__version__", "opcheck", "should_compile", "watch"]


def __getattr__(name: str) -> Any:
    """``pt2doctor.watch`` / ``pt2doctor.Watch`` are imported on first use (the CLI's report
    path never needs them)."""
    import importlib

    if name in ("watch", "Watch"):
        return getattr(importlib.import_module("pt2doctor.inprocess"), name)
    if name == "should_compile":
        return importlib.import_module("pt2doctor.compilability").should_compile
    if name == "opcheck":
        return importlib.import_module("pt2doctor.customops").opcheck
    raise AttributeError(f"module 'pt2doctor' has no attribute {name!r}")
