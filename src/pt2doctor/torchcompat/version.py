"""Which torch this is, and whether pt2doctor supports it (torch >= 2.6: the structured trace
with recompile reasons exists there)."""

from __future__ import annotations

from collections.abc import Callable

# (what it is, the oldest torch it was checked against): pt2doctor requires torch >= 2.6.
MIN_TORCH = (2, 6)


ErrorCallback = Callable[[str, BaseException], None]


def ignore_error(what: str, error: BaseException) -> None:
    return None


def torch_version() -> tuple[int, int] | None:
    """(major, minor) of the imported torch, or None when torch is not importable."""
    try:
        import torch
    except ImportError:
        return None
    parts = torch.__version__.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def supported() -> bool:
    version = torch_version()
    return version is not None and version >= MIN_TORCH
