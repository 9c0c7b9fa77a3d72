"""Apply one fix of pt2doctor's advice tables to a program and prove it: ``prove(fix_id, before,
after)``.

A program is a function ``program(compile)`` that builds its model and inputs, compiles what the
user would compile with ``compile(fn, **torch_compile_kwargs)``, runs its calls and returns what
it computed (tensors, numbers, nested lists/tuples/dicts of them). ``prove``:

1. runs ``before`` eagerly (``compile`` returns ``fn`` itself): the reference results;
2. runs ``before`` compiled under ``pt2doctor.watch()``: pt2doctor's report must show the fix's
   paragraph and its quote (tests/fix_catalog.py) on this program. A ``fallback`` paragraph (a
   recompile cause's) may be replaced by a more specific fix: then the report must at least
   have the finding the fix is for;
3. runs ``after`` (the program with the fix applied, and ``config``: the Dynamo config the fix
   sets) compiled under ``watch()``: what the fix is for (breaks, compiles, skipped frames or
   errors, by the catalog's ``kind``) must be fewer than in step 2, by pt2doctor's count and by
   the graphs the backend was handed; a fix for wrong ``results`` needs step 2's results to
   differ from step 1's;
4. checks that ``after``'s results equal step 1's (``torch.testing.assert_close``): a fix that
   changes what the program computes is not a fix.

Each run starts from ``torch._dynamo.reset()`` and ``torch.manual_seed(0)``. ``backend="eager"``
by default: Dynamo-level behaviour, ~0.1-1 s a program. tests/unit/test_fix_catalog.py counts the
``prove`` calls in the tests: every catalog entry is applied in at least two programs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

import pt2doctor
from fix_catalog import FIXES

Compile = Callable[..., Any]
Program = Callable[[Compile], Any]


@dataclass
class Run:
    """One compiled run of a program: what it returned, pt2doctor's report, the backend's count
    of graphs, and the exception it raised (a compile error), if any."""

    outputs: Any
    report: dict[str, Any]
    graphs: int
    error: BaseException | None = None

    def count(self, key: str) -> int:
        if key == "largest_graph_ops":
            return max((int(c.get("graph_op_count") or 0) for c in self.report["compiles"]),
                       default=0)  # fmt: skip
        return int(self.report["summary"].get(key) or 0)

    def advice(self) -> list[str]:
        """Every advice paragraph the report gives: findings, break rows and plan steps."""
        texts: list[str] = []
        for item in [*self.report["findings"], *self.report["graph_breaks"]]:
            texts.append(str(item.get("advice") or ""))
            texts += [str(fix.get("text") or "") for fix in item.get("fixes") or ()]
        for step in self.report.get("plan") or ():
            texts += [str(value) for value in step.values() if isinstance(value, str)]
        return [text for text in texts if text]


@dataclass
class Proof:
    fix_id: str
    before: Run
    after: Run
    shown: bool  # the fix's own paragraph was in the report (not only a more specific fix)
    measures: dict[str, tuple[int, int]] = field(default_factory=dict)


class _Counter:
    def __init__(self, backend: str) -> None:
        self.graphs = 0
        self.backend = torch._dynamo.lookup_backend(backend)

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        self.graphs += 1
        return self.backend(gm, example_inputs)


def _signature(paragraph: str) -> str:
    """The longest literal piece of a paragraph (its ``{placeholders}`` filled per program)."""
    pieces = [piece for chunk in paragraph.split("{") for piece in chunk.split("}")]
    return max(pieces, key=len).strip()[:60]


@contextlib.contextmanager
def _config(settings: dict[str, Any] | None) -> Iterator[None]:
    if settings:
        with torch._dynamo.config.patch(**settings):
            yield
    else:
        yield


def _compiled_run(
    program: Program, backend: str, config: dict[str, Any] | None, kwargs: dict[str, Any]
) -> Run:
    torch._dynamo.reset()
    torch.manual_seed(0)
    counter = _Counter(backend)

    def compile(fn: Any, **more: Any) -> Any:
        return torch.compile(fn, backend=counter, **{**kwargs, **more})

    outputs: Any = None
    error: BaseException | None = None
    with _config(config), pt2doctor.watch() as watched:
        try:
            outputs = program(compile)
        except Exception as exc:  # a compile error the fix is for: kept, the report says it
            error = exc
    report = watched.report()
    torch._dynamo.reset()
    return Run(outputs, report, counter.graphs, error)


def _same_results(got: Any, want: Any, fix_id: str, rtol: float | None, atol: float | None) -> None:
    torch.testing.assert_close(
        got, want, rtol=rtol, atol=atol, msg=lambda m: f"{fix_id}: results changed: {m}"
    )


_MEASURES = {
    "break": ("graph_breaks",),
    "recompile": ("compiles",),
    "skip": ("skipped_frames",),
    "error": ("failures",),
    "graph_size": ("largest_graph_ops",),
    "variants": ("recompiles",),
    "results": (),
}
# The finding a fix is for, by kind: what a fallback paragraph's program must at least have.
_FINDING = {
    "break": "graph_break",
    "recompile": "recompiles",
    "skip": "frame_skipped",
    "error": "compile_failure",
    "graph_size": "large_graph",
    "variants": "recompiles",
    "results": "recompiles",
}


def prove(
    fix_id: str,
    before: Program,
    after: Program,
    *,
    config: dict[str, Any] | None = None,
    before_config: dict[str, Any] | None = None,
    backend: str = "eager",
    compile_kwargs: dict[str, Any] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> Proof:
    """Apply catalog fix ``fix_id``: ``before`` is the program as written, ``after`` with the fix
    applied (and ``config`` set while it runs). Fails unless pt2doctor shows the fix on
    ``before``, the fix removes what it is for, and the results stay the same."""
    entry = FIXES[fix_id]
    kwargs = dict(compile_kwargs or {})
    torch._dynamo.reset()
    torch.manual_seed(0)
    with _config(before_config):
        reference = before(lambda fn, **_: fn)
    first = _compiled_run(before, backend, before_config, kwargs)
    paragraph = entry.paragraph()
    said = [text for text in first.advice() if entry.quote in text]
    shown = any(_signature(paragraph) in text for text in said)
    if not shown:
        codes = {finding["code"] for finding in first.report["findings"]}
        assert entry.fallback and _FINDING[entry.kind] in codes, (
            f"{fix_id}: pt2doctor does not give this fix on {before.__name__}; "
            f"its advice: {first.advice()}"
        )
    second = _compiled_run(after, backend, {**(before_config or {}), **(config or {})}, kwargs)
    assert second.error is None, f"{fix_id}: the fixed program failed: {second.error!r}"
    measures = {key: (first.count(key), second.count(key)) for key in _MEASURES[entry.kind]}
    for key, (was, now) in measures.items():
        assert now < was, f"{fix_id}: {key} {was} -> {now}: the fix did not remove it"
    if entry.kind in ("break", "recompile"):
        assert second.graphs < first.graphs or entry.kind == "break", (
            f"{fix_id}: graphs {first.graphs} -> {second.graphs}"
        )
    if entry.kind == "results":  # the fix is for wrong results: the program's compiled ones
        try:
            _same_results(first.outputs, reference, fix_id, rtol, atol)
        except AssertionError:
            pass
        else:
            raise AssertionError(f"{fix_id}: {before.__name__} compiled gives the eager results")
    if entry.kind == "error":
        assert first.error is not None or first.count("failures"), f"{fix_id}: no error to fix"
    _same_results(second.outputs, reference, fix_id, rtol, atol)
    return Proof(fix_id, first, second, shown, measures)
