"""The innermost frame of the user's own code in an exception: where a user compiler pass,
a custom op's kernel or the model raised. torch, pt2doctor, the standard library and
installed packages are not the user's code."""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback
import types
from typing import Any

_NOT_USER = tuple(
    os.path.realpath(path) + os.sep
    for path in {
        sysconfig.get_paths().get("stdlib", ""),
        sysconfig.get_paths().get("purelib", ""),
        sysconfig.get_paths().get("platlib", ""),
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # pt2doctor itself
    }
    if path
)
MAX_CHAIN = 10


def is_user_file(filename: str) -> bool:
    if filename.startswith("<"):  # <string>, <frozen ...>, generated code
        return False
    return not os.path.realpath(filename).startswith(_NOT_USER)


def caller_frame(limit: int = 64) -> dict[str, Any] | None:
    """``{function, file, line}`` of the innermost frame of the user's code on the current
    stack (the line that called into torch), None when there is none within ``limit``."""
    frame: types.FrameType | None = sys._getframe(1)
    for _ in range(limit):
        if frame is None:
            return None
        code = frame.f_code
        if is_user_file(code.co_filename):
            return {"function": code.co_name, "file": code.co_filename, "line": frame.f_lineno}
        frame = frame.f_back
    return None


def error_chain(error: BaseException) -> list[BaseException]:
    """The error and what caused it, outermost first (Dynamo wraps a backend's error in
    BackendCompilerFailed, whose ``inner_exception`` is the cause)."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in found and len(found) < MAX_CHAIN:
        found.append(current)
        inner = getattr(current, "inner_exception", None)
        if isinstance(inner, BaseException):
            current = inner
        else:
            current = current.__cause__ or current.__context__
    return found


def user_frames(error: BaseException) -> list[dict[str, Any]]:
    """Frames of the user's code in the error's chain, innermost first, each
    ``{function, file, line}`` (file as the traceback spells it)."""
    found: list[dict[str, Any]] = []
    for link in reversed(error_chain(error)):
        for frame in reversed(traceback.extract_tb(link.__traceback__)):
            entry = {"function": frame.name, "file": frame.filename, "line": frame.lineno}
            if is_user_file(frame.filename) and entry not in found:
                found.append(entry)
    return found


def frame_label(frame: dict[str, Any]) -> str:
    """``channels_last_prep_pass (passes.py:12)``."""
    return f"{frame['function']} ({os.path.basename(str(frame['file']))}:{frame['line']})"
