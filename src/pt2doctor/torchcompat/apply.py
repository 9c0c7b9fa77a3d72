"""Apply a fix to a program from outside it (``run --try-fixes``): config values of torch's
private config modules, ``torch._dynamo.maybe_mark_dynamic`` on named arguments of every
compiled callable at each call, and replaced ``torch.compile`` settings.

A trial is JSON (analysis/recompiles/fixes.py ``FixApplication.as_json``)::

    {"config": {"torch._dynamo.config.recompile_limit": 10},
     "marks": [{"arg": "input_ids", "dim": 1}], "compile": {"dynamic": null}}
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from pt2doctor.torchcompat.dynamo import (
    _wrap_torch_compile,
    intercept_compiled_calls,
    original_module,
)
from pt2doctor.torchcompat.version import supported

CONFIG_MODULES = ("torch._dynamo.config", "torch._inductor.config", "torch.fx.experimental._config")
"""The only modules a trial may set values in."""


def set_config(key: str, value: Any) -> str | None:
    """Set ``module.name = value`` for a module of CONFIG_MODULES; None when set, else why
    not (an unknown module or a name this torch lacks: "unavailable on this torch")."""
    module_name, _, name = key.rpartition(".")
    if module_name not in CONFIG_MODULES:
        return f"{module_name} is not a config module"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return f"{module_name} is unavailable on this torch"
    if not hasattr(module, name):
        return f"{key} is unavailable on this torch"
    setattr(module, name, value)
    return None


def _positions(signature: inspect.Signature | None) -> dict[str, int]:
    """Parameter name -> position, for the parameters that can be passed positionally."""
    if signature is None:
        return {}
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in signature.parameters.values() if p.kind in kinds]
    return {name: index for index, name in enumerate(names)}


def _signature(target: Any) -> inspect.Signature | None:
    """The signature the compiled callable is called with (a module's ``forward``; for
    ``module.compile()``, which compiles ``_call_impl``, its owner's ``forward``)."""
    owner = getattr(target, "__self__", None)
    if getattr(getattr(target, "__func__", None), "__name__", "") == "_call_impl":
        target = owner.forward  # type: ignore[union-attr]
    elif hasattr(target, "forward") and not inspect.isfunction(target):
        target = target.forward
    with contextlib.suppress(TypeError, ValueError):
        return inspect.signature(target)
    return None


class Marker:
    """Marks the named arguments' dims dynamic at each call, and counts the marks made."""

    def __init__(self, marks: list[tuple[str, int]]) -> None:
        self.marks = marks
        self.made: dict[str, int] = {}

    def mark(
        self, positions: dict[str, int], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        import torch

        for name, dim in self.marks:
            if name in kwargs:
                value = kwargs[name]
            elif name in positions and positions[name] < len(args):
                value = args[positions[name]]
            else:
                continue
            if isinstance(value, torch.Tensor) and value.dim() > dim:
                torch._dynamo.maybe_mark_dynamic(value, dim)
                key = f"{name}:{dim}"
                self.made[key] = self.made.get(key, 0) + 1

    def wrap(self, compiled: Any, target: Any) -> Any:
        """``compiled`` (what torch.compile returned for ``target``), marking before each call.
        A compiled module keeps its type: its ``forward`` is replaced on the instance."""
        positions = _positions(_signature(target))
        mark = self.mark
        if original_module(compiled) is not compiled:  # torch.compile(module): an OptimizedModule
            inner = compiled.forward

            def forward(*args: Any, **kwargs: Any) -> Any:
                mark(positions, args, kwargs)
                return inner(*args, **kwargs)

            compiled.forward = forward
            return compiled

        @functools.wraps(compiled)
        def marked(*args: Any, **kwargs: Any) -> Any:
            mark(positions, args, kwargs)
            return compiled(*args, **kwargs)

        return marked


def apply_fix(trial: dict[str, Any], on_event: Callable[..., None]) -> Marker | None:
    """Apply ``trial`` in this process (once torch is imported); ``on_event(kind, **fields)``
    records what was applied and what could not be. Returns the marker (None: no marks, or
    a torch older than pt2doctor supports)."""
    if not supported():
        on_event("try_fix_compile", ok=False, error="unavailable on this torch")
        return None
    for key, value in (trial.get("config") or {}).items():
        problem = set_config(key, value)
        on_event("try_fix_config", key=key, value=value, ok=problem is None, error=problem)
    marks = [(str(m["arg"]), int(m["dim"])) for m in trial.get("marks") or []]
    overrides = dict(trial.get("compile") or {})
    if not marks and not overrides:
        return None
    marker = Marker(marks) if marks else None

    def wrap(original: Any) -> Callable[..., Any]:
        def compile_with_fix(model: Any = None, **kwargs: Any) -> Any:
            kwargs.update(overrides)
            compiled = original(model, **kwargs)
            if model is None or marker is None:  # @torch.compile(...): it calls us again
                return compiled
            return marker.wrap(compiled, model)

        return compile_with_fix

    ok = _wrap_torch_compile("_pt2doctor_try", wrap)
    on_event("try_fix_compile", marks=[list(m) for m in marks], compile=overrides, ok=ok)
    return marker


def compiled_calls_without_grad() -> list[int] | None:
    """Run every call of what ``torch.compile`` returns under ``torch.no_grad()`` (a try of
    ``autograd_in_inference``'s fix); the returned one-item list counts the calls made so.
    None when torch is not importable."""
    calls = [0]

    def make(compiled: Any, model: Any) -> Callable[..., Any]:
        import torch

        def call(function: Callable[..., Any], args: Any, kwargs: Any) -> Any:
            calls[0] += 1
            with torch.no_grad():
                return function(*args, **kwargs)

        return call

    return calls if intercept_compiled_calls("_pt2doctor_try_no_grad", make) else None


def loaders_with_workers(workers: int) -> list[int] | None:
    """Give ``num_workers=workers`` to each ``torch.utils.data.DataLoader`` the program makes
    without workers (a try of ``data_loading``'s fix); the returned one-item list counts the
    loaders changed. Public API only (the DataLoader's own ``__init__``, wrapped). None when
    torch is not importable."""
    try:
        from torch.utils.data import DataLoader
    except ImportError:
        return None
    made = [0]
    original = DataLoader.__init__
    if getattr(original, "_pt2doctor_workers", False):
        return made

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) < 6 and not kwargs.get("num_workers"):  # num_workers is the 6th
            kwargs["num_workers"] = workers
            made[0] += 1
        original(self, *args, **kwargs)

    init._pt2doctor_workers = True  # type: ignore[attr-defined]
    DataLoader.__init__ = init  # type: ignore[method-assign]
    return made
