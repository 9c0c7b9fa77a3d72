"""Compile functions of the program that it never gave ``torch.compile`` (``run --try-fixes``
on ``eager_outside_compiled``): each target, a module-level function named by its file and
name, is replaced in its module's globals by ``torch.compile`` of it, the first time a frame
of that module makes a call once the function is defined. Calls that find the function by
its global name (``top_p(logits)``) then run compiled; a reference taken before (a default
argument, an alias) keeps the function as it was, and the count of compiled calls says so.

The swap watches calls with ``sys.setprofile`` only until every target is replaced (or the
program ends), so the profiled window, which opens after warm calls, runs without it."""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any


class FunctionCompiler:
    """Replaces each ``(file, name)`` target with its ``torch.compile`` and counts the calls
    that reached the compiled one."""

    def __init__(self, targets: list[tuple[str, str]]) -> None:
        self.pending = {(os.path.realpath(file), name) for file, name in targets}
        self.calls: dict[str, int] = {f"{os.path.basename(f)}:{n}": 0 for f, n in self.pending}
        self.names = {name for _, name in self.pending}

    def install(self) -> None:
        sys.setprofile(self._on_call)
        threading.setprofile(self._on_call)

    def uninstall(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)

    def _on_call(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        scope = frame.f_globals
        for name in self.names:
            function = scope.get(name)
            code = getattr(function, "__code__", None)
            if code is None or not callable(function):
                continue
            key = (os.path.realpath(code.co_filename), name)
            if key in self.pending:
                scope[name] = self._compiled(function, f"{os.path.basename(key[0])}:{name}")
                self.pending.discard(key)
        if not self.pending:
            self.uninstall()

    def _compiled(self, function: Callable[..., Any], key: str) -> Callable[..., Any]:
        import torch

        compiled = torch.compile(function)
        calls = self.calls

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[key] += 1
            return compiled(*args, **kwargs)

        return call


def compile_functions(
    targets: list[dict[str, str]], on_event: Callable[..., None]
) -> FunctionCompiler:
    """Start replacing ``targets`` (``{"file", "function"}``); ``on_event(kind, **fields)``
    records the targets. The caller records ``calls`` at exit."""
    compiler = FunctionCompiler([(t["file"], t["function"]) for t in targets])
    on_event("try_fix_functions", targets=sorted(compiler.calls), ok=True)
    compiler.install()
    return compiler
