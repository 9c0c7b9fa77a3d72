"""What a recompile fix is (:class:`Fix`: its text, and how pt2doctor can apply it itself,
:class:`FixApplication`), with the small helpers every fix module shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pt2doctor.analysis.paths import library_path
from pt2doctor.analysis.recompiles.changes import SourceChange
from pt2doctor.analysis.recompiles.outlook import FrameExplanation, Varying
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import SourceLine


@dataclass(frozen=True, slots=True)
class FixApplication:
    """A fix pt2doctor can apply to the program itself (``run --try-fixes``): config values set
    before the program starts, ``maybe_mark_dynamic`` on named arguments of every compiled
    callable at each call, ``torch.compile`` settings replaced. ``label`` is the fix as the
    user would write it."""

    label: str
    config: tuple[tuple[str, Any], ...] = ()
    """(``module.name``, value): ``torch._dynamo.config.recompile_limit``, 16."""
    marks: tuple[tuple[str, int], ...] = ()
    """(argument name, dim): the argument passed by that keyword, or at that parameter's
    position of the compiled callable's signature."""
    compile: tuple[tuple[str, Any], ...] = ()
    """torch.compile keyword arguments to replace: ("dynamic", None)."""
    timed: bool = False
    """A fix of time, not of compiles: its re-run is profiled as the main run was, and it helps
    when the hot loop's call got faster beyond both windows' noise (verdicts.py
    ``time_moved``)."""
    functions: tuple[tuple[str, str], ...] = ()
    """(file, name) of module-level functions of the user's to wrap in ``torch.compile``
    (capture/compile_functions.py): code the program never gave the compiler."""
    no_grad: bool = False
    """Run each call of the compiled code under ``torch.no_grad()`` (a loop that serves
    inference with grad enabled)."""
    loader_workers: int = 0
    """``num_workers`` given to each DataLoader the program makes without workers."""

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "label": self.label,
            "config": dict(self.config),
            "marks": [{"arg": arg, "dim": dim} for arg, dim in self.marks],
            "compile": dict(self.compile),
        }
        if self.functions:
            found["functions"] = [{"file": file, "function": name}
                                  for file, name in self.functions]  # fmt: skip
        if self.no_grad:
            found["no_grad"] = True
        if self.loader_workers:
            found["loader_workers"] = self.loader_workers
        return {**found, "timed": True} if self.timed else found


@dataclass(frozen=True, slots=True)
class Fix:
    """One fix's text, and how pt2doctor can apply it itself (None: it is code to change)."""

    text: str
    application: FixApplication | None = None


def and_words(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def changes_of(explanation: FrameExplanation) -> list[SourceChange]:
    return [change for item in explanation.recompiles for change in item.changes]


INT = lazy_compile(r"-?\d+")


DYNAMO_CONFIG = "torch._dynamo.config"
HOOK_GUARDS_CONFIG = f"{DYNAMO_CONFIG}.skip_nnmodule_hook_guards"
"""Dynamo's setting that, False, guards each module's hooks (True, torch's default, does not)."""


CARRIED = "(value carried over the graph break"
"""How sources.py names a value Dynamo carries on the stack across a graph break."""


def at_line(line: SourceLine | None) -> str:
    if line is None or line.file is None:
        return ""
    code = f" (`{line.statement}`)" if line.statement else ""
    return f" at {line.file}:{line.line}{code}"


def read_at(change: SourceChange | None) -> str:
    """`` at FILE:LINE (`code`)`` of the user's line that read the value (its guard's); ''
    when that line is a library's (a fix never sends the user into torch's source)."""
    line = change.installed_at if change else None
    if line is None or (line.file and library_path(line.file) is not None):
        return ""
    return at_line(line)


def stored_at(store: dict[str, Any] | None) -> str:
    """`` (set at FILE:LINE: `m.p = p`)``: the user's line that stores the value."""
    if not store:
        return ""
    code = f": `{store['code']}`" if store.get("code") else ""
    return f", set at {store['file']}:{store.get('line')}{code}"


def values_text(row: Varying, most: int = 6) -> str:
    shown = ", ".join(row.values[:most])
    return shown + (", …" if len(row.values) > most else "")


def first_change(explanation: FrameExplanation, source: str) -> SourceChange | None:
    items = [*explanation.recompiles, *([explanation.refused] if explanation.refused else [])]
    return next((c for item in items for c in item.changes if c.label == source), None)


def limit_trial(limit: int) -> FixApplication:
    return FixApplication(
        f"{DYNAMO_CONFIG}.recompile_limit = {limit}",
        config=((f"{DYNAMO_CONFIG}.recompile_limit", limit),),
    )
