"""Module hooks the user's code registers or removes after a graph was compiled: the evidence
for ablate's "hooks changed after compile" verdict (ablate/hook_verdict.py), in both modes.

Case mode records them in the ablation worker while the compiled model runs
(:class:`HookChangeLog`); script mode reads the ``module_hook`` events the program's probes
recorded (``pt2doctor run``'s capture) and keeps those after its first compile
(:func:`late_hook_changes`). Either way each change is ``{action, method, module, file, line,
function, code}``: what changed, on which module class, at which user line.

Dynamo does not guard on module hooks by default (``skip_nnmodule_hook_guards``): compiled code
keeps the hooks it traced. A change after compile is only a suspect; the toggle
``skip_nnmodule_hook_guards=False`` is the proof.
"""

from __future__ import annotations

import contextlib
import linecache
from collections.abc import Iterable, Iterator
from typing import Any

from pt2doctor import torchcompat
from pt2doctor.capture.frames import caller_frame
from pt2doctor.trace.types import ProbeData

MAX_CHANGES = 8
"""Distinct changes kept (one per action, method, module and line; the count beside it)."""


def _code(change: dict[str, Any]) -> str:
    """The user's line as written, its trailing comment left out."""
    line = linecache.getline(str(change.get("file") or ""), int(change.get("line") or 0))
    return line.split(" # ")[0].strip()[:200]


def distinct(changes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (action, method, module, file, line), with ``count`` and ``code`` (the
    user's line as written, when its file can be read), at most :data:`MAX_CHANGES`."""
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for change in changes:
        key = tuple(change.get(k) for k in ("action", "method", "module", "file", "line"))
        if key in found:
            found[key]["count"] += 1
        elif len(found) < MAX_CHANGES:
            kept = {k: change.get(k) for k in ("action", "method", "module", "file", "line",
                                               "function")}  # fmt: skip
            found[key] = {**kept, "code": change.get("code") or _code(change), "count": 1}
    return list(found.values())


def late_hook_changes(probes: ProbeData) -> list[dict[str, Any]]:
    """Script mode: the hook changes a rung's program made after its first compile (its
    probes' ``module_hook`` events later than the first ``compiled`` one)."""
    if not probes.module_hooks or not probes.compiled:
        return []
    first = min(float(info.get("t") or 0.0) for info in probes.compiled.values())
    return distinct(e for e in probes.module_hooks if float(e.get("t") or 0.0) > first)


class HookChangeLog:
    """Case mode, in the ablation worker: the hook changes made while the compiled model runs,
    once Dynamo has compiled a frame (a change before any compile is traced with the rest and
    is no suspect), at a line of the user's code (pt2doctor's own recording hooks have none).
    :meth:`start` begins a trial (after its ``torch.compiler.reset()``, which drops Dynamo's
    compile callbacks), :meth:`compiled_run` is entered around the compiled run
    (cases/align.py), :meth:`found` gives what it saw. nn.Module's hook methods are wrapped
    once per process (torchcompat.record_module_hooks); nothing is recorded where this torch
    cannot."""

    def __init__(self) -> None:
        self.changes: list[dict[str, Any]] = []
        self.compiles = 0
        self.watching = False
        self.wrapped: bool | None = None

    def start(self) -> None:
        self.changes, self.compiles, self.watching = [], 0, False
        if self.wrapped is None:
            self.wrapped = torchcompat.record_module_hooks(self._changed, where=caller_frame)
        if self.wrapped:
            torchcompat.on_compile_start(self._compiling)

    def _compiling(self, *args: Any) -> None:
        self.compiles += 1

    def _changed(self, change: dict[str, Any]) -> None:
        if self.watching and self.compiles and change.get("file"):
            self.changes.append(change)

    @contextlib.contextmanager
    def compiled_run(self) -> Iterator[None]:
        """Changes made inside the block (the compiled run) after a compile are recorded."""
        self.watching = True
        try:
            yield
        finally:
            self.watching = False

    def found(self) -> list[dict[str, Any]]:
        """The changes the compiled run made, distinct."""
        return distinct(self.changes)


HOOK_CHANGES = HookChangeLog()
"""The worker's one log (nn.Module's methods are wrapped once per process)."""
