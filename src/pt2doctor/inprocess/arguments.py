"""The in-process API's arguments checked where the user passes them: a misuse (arguments
swapped, a string for a number, a tensor for a list of samples) is one clear ``TypeError`` or
``ValueError`` naming the call, never an ``AttributeError`` from deep inside, nor a silently
wrong answer."""

from __future__ import annotations

from typing import Any


def _what(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


def count_argument(call: str, name: str, value: Any, *, optional: bool = False) -> None:
    """``value`` is a non-negative int (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{call}: {name} must be an int, got {_what(value)}")
    if value < 0:
        raise ValueError(f"{call}: {name} must be 0 or more, got {value}")


def compiled_argument(call: str, name: str, value: Any) -> None:
    """``value`` is what the user compiled: a function, a module or what torch.compile
    returned."""
    if not callable(value):
        raise TypeError(
            f"{call}: {name} must be the function or module you compiled (or what "
            f"torch.compile returned), got {_what(value)}"
        )


def module_argument(call: str, value: Any) -> None:
    """``value`` is an ``nn.Module`` (the model comes first, then its inputs)."""
    import torch

    if not isinstance(value, torch.nn.Module):
        raise TypeError(
            f"{call}: the first argument must be the model (an nn.Module), then its inputs; "
            f"got {_what(value)}"
        )


def samples_argument(call: str, value: Any) -> None:
    """``value`` is a list or tuple of samples, each a tuple of arguments or one argument; a
    tensor would be read row by row."""
    import torch

    if isinstance(value, torch.Tensor) or not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{call}: samples must be a list of inputs (each a tuple of arguments, or one "
            f"argument), e.g. [(x1,), (x2,)]; got {_what(value)}"
        )
